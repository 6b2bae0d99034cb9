// LockOrderChecking: whether lock-order checking is on in this process (LockOrderGraph.swift
// has the algorithm, LockOrderHooks.swift what each lock calls).
//
// Two switches, both needed: the package trait LockOrderChecking compiles the hooks in
// (`swift test --traits LockOrderChecking`; without it they are empty inline functions and
// every lock is the same machine code as without this feature), and the environment variable
// INTERLOCK_LOCK_ORDER, read once, turns the checks on for a run: `trap` (report the first
// violation and trap) or `report` (report each violation once and go on). Any other value is
// a programmer error and traps naming it.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Opt-in detection of potential deadlocks: locks taken in inconsistent orders by different
/// threads, and a thread locking a non-recursive lock it already holds.
///
/// Turn it on for a test or debug run, without editing code:
///
/// ```sh
/// INTERLOCK_LOCK_ORDER=trap swift test --traits LockOrderChecking    # or =report
/// ```
///
/// The package trait `LockOrderChecking` compiles the checks in; without it they do not exist
/// and cost nothing. With it, the environment variable `INTERLOCK_LOCK_ORDER` turns them on:
/// `trap` prints the first violation and traps, `report` prints each violation once and goes
/// on. Then every acquisition of a ``Lock``, ``RecursiveLock``, ``SpinLock``,
/// ``ReadWriteLock`` (read and write), ``Condition``, ``ConditionLock`` and
/// ``synchronized(_:_:)`` records which locks the thread already holds, as edges of a global
/// held-before graph. A blocking acquisition that closes a cycle in that graph is reported even
/// when no deadlock happened this time, and so is a thread locking a non-recursive lock that it
/// already holds (it would hang). The report names every lock of the cycle (its `name`, or its
/// type and address) and shows where each edge was first recorded (a backtrace).
///
/// - `tryLock()` and the timed `lock(before:)` cannot deadlock forever: they add no edge into
///   the lock they take (as Linux's lockdep treats a trylock), but once they succeed the lock
///   counts as held, and locks taken while holding it get edges from it.
/// - Unlocking out of acquisition order is allowed.
/// - A lock that is deinitialised leaves the graph; an object used with `synchronized` leaves it
///   when it is deallocated. An address used again is a new lock.
/// - ``Condition/wait()`` and its timed forms keep the condition's mutex on the thread's held
///   list while they wait: the thread holds it again when they return.
/// - A thread holding more than 64 locks at once is checked for its first 64 only.
public enum LockOrderChecking {
    /// Whether the checks run in this process: built with the package trait
    /// `LockOrderChecking`, and `INTERLOCK_LOCK_ORDER` set to `trap` or `report`.
    public static var isEnabled: Bool { _LockOrder.mode != .off }
}

/// What INTERLOCK_LOCK_ORDER asked for (see LockOrderChecking.swift).
@usableFromInline
internal enum _LockOrderMode: Sendable {
    case off
    case report
    case trap

    /// The mode of this process: `.off` without the trait; else from the environment.
    static let current: _LockOrderMode = {
        #if INTERLOCK_LOCK_ORDER
        guard let raw = getenv("INTERLOCK_LOCK_ORDER") else { return .off }
        let value = String(cString: raw)
        switch value {
        case "", "off", "0": return .off
        case "report": return .report
        case "trap": return .trap
        default:
            // fatalError, not preconditionFailure: -O builds drop a precondition's message.
            fatalError(
                "LockOrderChecking: INTERLOCK_LOCK_ORDER=\(value) is not a mode; use trap, report or off")
        }
        #else
        return .off
        #endif
    }()
}
