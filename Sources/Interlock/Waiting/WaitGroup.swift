// WaitGroup: waiting for a set of tasks, the heir of Dispatch's `dispatch_group_t`: a counter
// of tasks in progress, a futex epoch that moves each time the counter reaches zero, and a list
// of bodies to run then.
//
// State word (64 bits):
//
//   bits 0-61   count     tasks entered and not yet left
//   bit  62     WAITING   a thread may sleep in wait(): the leave that reaches zero must
//                         advance the epoch and wake
//   bit  63     NOTIFY    bodies are listed: the leave that reaches zero must run them
//
//   enter(n)   state += n                                  (one atomic add)
//   leave()    old = state -= 1; count(old) == 0: misuse (undone, then trap)
//              count(old) > 1, or no flag: done              (one atomic subtract)
//              count(old) == 1 with a flag: _reachedZero
//   wait()     count == 0: return (one acquire load). Else e = epoch; state |= WAITING; if
//              the count read by that OR is 0, return; else sleep on the epoch expecting e
//              until it moves (it moves only when the count reaches zero)
//   notify(b)  under listLock: NOTIFY set (or already set) with count > 0: append b;
//              count == 0: run b at once
//   _reachedZero (the leave that made the count 0, with a flag):
//              WAITING: clear it, epoch += 1, wake every sleeper
//              NOTIFY:  under listLock take the list and clear NOTIFY; run the bodies after
//              releasing the lock, on this thread
//
// Invariants:
//   - No lost wake-up: a waiter reads the epoch, then sets WAITING with a read-modify-write
//     of the state. If that RMW comes before the leave's decrement in the state's order, the
//     leave sees WAITING and advances the epoch after the waiter read it, so the waiter's
//     futex wait fails or is woken; if after, the waiter's RMW reads count 0 and returns.
//   - wait() returns only when the count was zero at some instant during the call: either it
//     read zero, or the epoch moved after it read it, which a leave does only after making
//     the count zero.
//   - Under listLock, the list is non-empty exactly when NOTIFY is set. A body is appended
//     only while its registering call read a non-zero count with NOTIFY set; the leave that
//     next makes the count zero finds NOTIFY in its decrement's result and takes the list, so
//     every body runs exactly once. A body registered while that leave is between its
//     decrement and taking the list (the count is zero then, or was re-entered) runs on the
//     leave's thread right after.
//   - A stale WAITING (its waiter returned) costs the next zero one epoch advance and one
//     wake call for nobody.
//   - The epoch is 32 bits: a waiter that reads e and sleeps through exactly 2^32 zeros before
//     reaching the kernel would miss one. Accepted, as in Condition and glibc.
//
// Memory ordering (AArch64 as x86-64):
//   - leave's decrement is acq_rel: release publishes the leaving task's work to whoever sees
//     the count reach zero; acquire makes the zero-reaching leave see every earlier leave's
//     work (release sequence), which it then passes on to the bodies it runs. enter's add is
//     relaxed: entering publishes nothing (a task's work is published by its leave).
//   - wait()'s load of the count is acquire (pairs with the leaves' releases through the
//     release sequence of the zero-reaching decrement). The WAITING OR and the epoch's load and
//     advance are seq_cst (the Dekker pairing above, with the kernel's compare in futex_wait,
//     made after a full barrier); a waiter that reads a new epoch synchronizes with the leave
//     that advanced it, which had acquired every earlier leave: the tasks' work is visible.
//   - The list is guarded by listLock (acquire/release of the mutex); NOTIFY's set and
//     clear are seq_cst read-modify-writes made under it.
//   - `count` and `epoch` share no line with the list lock's word (128 bytes apart).

import CInterlock

/// The state of a ``WaitGroup`` (see the file comment).
@usableFromInline
internal struct _WaitGroupState {
    @usableFromInline var state: UInt64 = 0
    @usableFromInline var epoch: UInt32 = 0
    @usableFromInline var _reserved: UInt32 = 0
    // Keeps the list lock 128 bytes away from the state word (the file comment).
    // swift-format-ignore
    @usableFromInline var _padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                     UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    @usableFromInline var listLock: UInt32 = 0

    @inlinable init() {}
}

/// Waiting for a set of tasks: the heir of Dispatch's `DispatchGroup`.
///
/// Call ``enter(_:)`` before a task starts and ``leave()`` when it ends; ``wait()`` blocks
/// until every entered task has left, and ``notify(_:)`` runs a body once that happens.
///
/// ```swift
/// let group = WaitGroup()
/// for job in jobs {
///     group.enter()
///     startThread { job.run(); group.leave() }
/// }
/// group.wait()   // every job has run
/// ```
///
/// A group can be used again once its count is back at zero. Whatever a task wrote before its
/// ``leave()`` is visible to a thread returning from ``wait()`` and to the ``notify(_:)``
/// bodies. ``enter(_:)`` and ``leave()`` are one atomic instruction each and make no system
/// call unless a thread waits or a body is registered.
///
/// - Warning: ``leave()`` without a matching ``enter(_:)`` traps with a message, and so does
///   ``enter(_:)`` with a count below 1.
public final class WaitGroup: @unchecked Sendable {
    // Read and written only through the field pointers below after init; the first stored
    // property, so at a fixed offset of the object's one allocation.
    @usableFromInline internal var _storage: _WaitGroupState
    // Guarded by listLock.
    @usableFromInline internal var _bodies: [@Sendable () -> Void]

    /// Creates a group with no task entered.
    public init() {
        _storage = _WaitGroupState()
        _bodies = []
    }

    @usableFromInline static var _countMask: UInt64 { (1 << 62) - 1 }
    @usableFromInline static var _waiting: UInt64 { 1 << 62 }
    @usableFromInline static var _notify: UInt64 { 1 << 63 }

    @inlinable @inline(__always)
    internal func _field<T>(_ field: KeyPath<_WaitGroupState, T>, as type: T.Type) -> UnsafeMutablePointer<T> {
        _stateField(of: self, field, as: type)
    }

    @inlinable @inline(__always) internal var _state: UnsafeMutablePointer<UInt64> { _field(\.state, as: UInt64.self) }
    @inlinable @inline(__always) internal var _epoch: UnsafeMutablePointer<UInt32> { _field(\.epoch, as: UInt32.self) }
    @inlinable @inline(__always) internal var _listLock: UnsafeMutablePointer<UInt32> {
        _field(\.listLock, as: UInt32.self)
    }

    /// Tasks entered and not yet left: a snapshot.
    public var count: Int {
        // Relaxed: a snapshot that orders nothing.
        Int(ilk_atomic_load_u64(_state, ILK_ORDER_RELAXED) & WaitGroup._countMask)
    }

    /// Counts `count` more tasks in progress.
    /// - Warning: A count below 1 traps.
    @inlinable @inline(__always)
    public func enter(_ count: Int = 1) {
        if _slowPath(count < 1) { _enterMisuse(count) }
        // Relaxed: entering publishes nothing; each task's work is published by its leave.
        let old = ilk_atomic_fetch_add_u64(_state, UInt64(count), ILK_ORDER_RELAXED)
        if _slowPath((old & WaitGroup._countMask) &+ UInt64(count) > WaitGroup._countMask) { _overflow(old, count) }
    }

    /// Counts one task as finished. The leave that brings the count to zero wakes the waiting
    /// threads and runs the bodies registered with ``notify(_:)``, on the calling thread.
    /// - Warning: More leaves than enters trap with a message.
    @inlinable @inline(__always)
    public func leave() {
        // Acq_rel: release publishes this task's work; acquire lets the leave that reaches
        // zero pass every task's work on to the bodies it runs (file comment).
        let old = ilk_atomic_fetch_sub_u64(_state, 1, ILK_ORDER_ACQ_REL)
        let count = old & WaitGroup._countMask
        if _fastPath(count > 1 || (count == 1 && old & (WaitGroup._waiting | WaitGroup._notify) == 0)) { return }
        _leaveSlow(old)
    }

    /// Blocks until the count is zero (at some instant during the call).
    @inlinable
    public func wait() {
        // Acquire: pairs with the leaves' releases (file comment).
        if _fastPath(ilk_atomic_load_u64(_state, ILK_ORDER_ACQUIRE) & WaitGroup._countMask == 0) { return }
        _ = _waitSlow(deadline: nil)
    }

    /// Blocks until the count is zero, or until `deadline`.
    ///
    /// Never returns `false` before the deadline.
    /// - Returns: `true` when the count was zero, `false` when the deadline passed first.
    @inlinable
    public func wait(before deadline: ContinuousClock.Instant) -> Bool {
        // Acquire: as in wait().
        if _fastPath(ilk_atomic_load_u64(_state, ILK_ORDER_ACQUIRE) & WaitGroup._countMask == 0) { return true }
        if ContinuousClock.now >= deadline { return false }
        return _waitSlow(deadline: deadline)
    }

    /// Runs `body` once the count is zero: at once, on the calling thread, if it is zero now;
    /// otherwise on the thread whose ``leave()`` brings it to zero. Each body runs exactly once.
    public func notify(_ body: @escaping @Sendable () -> Void) {
        let listLock = _listLock
        _MutexWord.lock(listLock, for: .waitGroup)
        // Seq_cst RMW under listLock: NOTIFY is set exactly while the list is non-empty.
        let old = ilk_atomic_fetch_or_u64(_state, WaitGroup._notify, ILK_ORDER_SEQ_CST)
        if old & WaitGroup._countMask == 0 && old & WaitGroup._notify == 0 {
            // Zero, and nothing listed: no leave will take a list; run at once.
            _ = ilk_atomic_fetch_and_u64(_state, ~WaitGroup._notify, ILK_ORDER_SEQ_CST)
            _ = _MutexWord.unlock(listLock, for: .waitGroup)
            // The seq_cst OR read the zero from the leaves' release sequence: their work is
            // visible to the body.
            body()
            return
        }
        _bodies.append(body)
        _ = _MutexWord.unlock(listLock, for: .waitGroup)
    }

    // MARK: - Slow paths

    /// The decrement found a count of 0 (misuse) or reached zero with a flag set.
    @usableFromInline @inline(never)
    internal func _leaveSlow(_ old: UInt64) {
        if old & WaitGroup._countMask == 0 {
            // Put the unit back before trapping: the word is never left corrupt.
            // Relaxed: a trap follows; nothing is published.
            _ = ilk_atomic_fetch_add_u64(_state, 1, ILK_ORDER_RELAXED)
            _lockMisuse("WaitGroup", name: nil, "leave() called more times than enter()")
        }
        if old & WaitGroup._waiting != 0 {
            // Seq_cst (both): the Dekker pairing with a waiter's epoch load and WAITING OR.
            _ = ilk_atomic_fetch_and_u64(_state, ~WaitGroup._waiting, ILK_ORDER_SEQ_CST)
            _ = ilk_atomic_fetch_add_u32(_epoch, 1, ILK_ORDER_SEQ_CST)
            _Futex.wakeAll(_epoch, for: .waitGroup)
        }
        if old & WaitGroup._notify != 0 {
            let listLock = _listLock
            _MutexWord.lock(listLock, for: .waitGroup)
            let bodies = _bodies
            _bodies = []
            // Seq_cst RMW under listLock: the list is now empty.
            _ = ilk_atomic_fetch_and_u64(_state, ~WaitGroup._notify, ILK_ORDER_SEQ_CST)
            _ = _MutexWord.unlock(listLock, for: .waitGroup)
            for body in bodies { body() }
        }
    }

    /// Sleeps until the epoch moves (the count reached zero) or `deadline` passes.
    @usableFromInline @inline(never)
    internal func _waitSlow(deadline: ContinuousClock.Instant?) -> Bool {
        let epoch = _epoch
        // Seq_cst: read before the WAITING OR below (file comment, no lost wake-up).
        let observed = ilk_atomic_load_u32(epoch, ILK_ORDER_SEQ_CST)
        // Seq_cst RMW; its acquire half also orders the tasks' work when it reads zero.
        let state = ilk_atomic_fetch_or_u64(_state, WaitGroup._waiting, ILK_ORDER_SEQ_CST)
        if state & WaitGroup._countMask == 0 { return true }
        while true {
            let result =
                deadline.map { _Futex.wait(epoch, expected: observed, until: $0, for: .waitGroup) }
                ?? _Futex.wait(epoch, expected: observed, for: .waitGroup)
            // Seq_cst: as the first read. Reading a new epoch synchronizes with the release
            // half of the leave that advanced it, which had acquired every task's leave.
            if ilk_atomic_load_u32(epoch, ILK_ORDER_SEQ_CST) != observed { return true }
            if result == .timedOut { return false }
        }
    }

    @usableFromInline @inline(never)
    internal func _enterMisuse(_ count: Int) -> Never {
        _lockMisuse("WaitGroup", name: nil, "enter(\(count)) with a count below 1")
    }

    @usableFromInline @inline(never)
    internal func _overflow(_ old: UInt64, _ count: Int) -> Never {
        _lockMisuse(
            "WaitGroup", name: nil, "enter(\(count)) overflows the count of \(old & WaitGroup._countMask) tasks")
    }
}
