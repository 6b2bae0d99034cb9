// WaitGroup: waiting for a set of tasks, the heir of Dispatch's `dispatch_group_t`: a counter
// of tasks in progress and, in the same 64-bit word, a futex epoch that moves each time a zero
// with sleepers is processed, plus a list of bodies to run at zero.
//
// State word (64 bits; the epoch is its high 32-bit half, the futex word waiters sleep on):
//
//   bits 0-29   count     tasks entered and not yet left
//   bit  30     WAITING   a thread may sleep in wait(); set only while count > 0
//   bit  31     NOTIFY    bodies are listed (set only under listLock)
//   bits 32-63  epoch     moves (+1) when a zero with WAITING is processed
//
//   count == 0 with WAITING or NOTIFY is a PENDING zero: the leave that made the count 0
//   still has to process it (advance the epoch and wake, take the list). Until it has, no
//   enter() changes the word, so a zero is always processed before the next cycle begins.
//
//   enter(n)   load; PENDING: wait until processed (pause, then yield); else
//              CAS state -> state + n                         (one atomic instruction)
//   leave()    old = state -= 1; count(old) == 0: misuse (undone, then trap)
//              count(old) > 1, or no flag: done               (one atomic subtract)
//              count(old) == 1 with a flag: _processZero
//   wait()     count == 0: return (one acquire load). Else CAS WAITING in (count > 0);
//              sleep on the epoch half expecting the epoch that CAS saw, until it moves
//   notify(b)  under listLock: count == 0 and no NOTIFY: run b at once; else set NOTIFY
//              (CAS, or already set) and append b
//   _processZero (the leave that made the count 0 with a flag; the zero is PENDING):
//              under listLock: one CAS clears WAITING and NOTIFY and, if WAITING was set,
//              advances the epoch; take the list; unlock; wake every sleeper; run the bodies
//              on this thread
//
// Invariants:
//   - WAITING set => count > 0 or a PENDING zero: waiters set it only by a CAS that saw
//     count > 0, and only _processZero clears it, in the same CAS that advances the epoch.
//   - No lost wake-up: a waiter sleeps only on the epoch that its WAITING CAS saw. The zero
//     that ends that cycle finds WAITING in its decrement (it is after the CAS in the word's
//     order), so its _processZero advances the epoch: the waiter's futex wait fails or is
//     woken.
//   - No early return: the epoch moves only when a zero is processed, and a zero is processed
//     before any enter() of the next cycle; so a waiter whose CAS saw count > 0 and epoch e
//     sees e move only through the zero that ends its own cycle, which comes after its CAS:
//     wait() returns only when the count was zero at some instant during the call. (The
//     previous design cleared WAITING and advanced a separate epoch after the decrement; an
//     enter() and wait() of the next cycle could slip between, and that wait returned at the
//     old zero with tasks still running: the fork-join benchmark hung on the drifted count.)
//   - Under listLock, a non-empty list (bodies, or tasks suspended in `wait() async`,
//     WaitGroup+Async.swift) implies NOTIFY; NOTIFY with an empty list happens only after a
//     task's wait was cancelled, and the next zero clears it. A body is appended
//     only while the count is non-zero or a PENDING zero with NOTIFY awaits processing; the
//     processing of the next zero takes the whole list under the lock, so each body runs
//     exactly once, at a zero that came after its registration began.
//   - The epoch is 32 bits: a waiter that reads e and sleeps through exactly 2^32 processed
//     zeros before reaching the kernel would miss one. Accepted, as in Condition and glibc.
//   - An enter() that meets a PENDING zero waits for one leave's processing: a few atomic
//     operations and a mutex hand-off, unbounded only if that thread is preempted there.
//
// Memory ordering (AArch64 as x86-64):
//   - leave's decrement is acq_rel: release publishes the leaving task's work; acquire makes
//     the zero-reaching leave see every earlier leave's work (release sequence), which it then
//     publishes with the seq_cst (release) CAS of _processZero to waiters that read the new
//     epoch, and passes on to the bodies it runs on its own thread.
//   - enter's CAS is relaxed: entering publishes nothing; its wait for a PENDING zero reads
//     with acquire loads only to leave the loop.
//   - wait()'s load of the count is acquire (pairs with the leaves' releases through the
//     release sequence of the zero-reaching decrement). The WAITING CAS is seq_cst, and so
//     is the load after each wake-up: a waiter that reads a new epoch synchronizes with the
//     processing CAS that wrote it. The kernel compares the epoch half in futex_wait after a
//     full barrier; a mixed-size access (the kernel's 32-bit read of a word Swift accesses as
//     64 bits) is outside the C model but coherent on x86-64 and AArch64.
//   - The list is guarded by listLock (acquire/release of the mutex); NOTIFY is set and
//     cleared only under it.
//   - The state word shares no line with the list lock's word (128 bytes apart).

import CInterlock
import Synchronization

/// The state of a ``WaitGroup`` (see the file comment).
@usableFromInline
internal struct _WaitGroupState {
    @usableFromInline var state: UInt64 = 0
    // Keeps the list lock 128 bytes away from the state word (the file comment).
    // swift-format-ignore
    @usableFromInline var _padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                     UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    @usableFromInline var listLock: UInt32 = 0

    @inlinable init() {}
}

/// Waiting for a set of tasks: the heir of Dispatch's `DispatchGroup`.
///
/// Call ``enter(_:)`` before a task starts and ``leave()`` when it ends; `wait()` blocks
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
/// ``leave()`` is visible to a thread returning from `wait()` and to the ``notify(_:)``
/// bodies. ``enter(_:)`` and ``leave()`` are one atomic instruction each and make no system
/// call unless a thread waits or a body is registered. An ``enter(_:)`` that meets the zero
/// of the previous cycle while its last ``leave()`` is still waking waiters or taking the
/// bodies waits for that to finish, so that a wait of the new cycle never ends at the old zero.
///
/// - Warning: ``leave()`` without a matching ``enter(_:)`` traps with a message, and so does
///   ``enter(_:)`` with a count below 1 or one that would make more than 2^30 - 1 tasks in
///   progress at once.
public final class WaitGroup: @unchecked Sendable {
    // Read and written only through the field pointers below after init; the first stored
    // property, so at a fixed offset of the object's one allocation.
    @usableFromInline internal var _storage: _WaitGroupState
    // Guarded by listLock.
    @usableFromInline internal var _bodies: [@Sendable () -> Void]
    // Tasks suspended in `wait() async` (WaitGroup+Async.swift). Guarded by listLock.
    @usableFromInline internal var _taskWaiters: [_WaitGroupTaskWaiter]

    /// Creates a group with no task entered.
    public init() {
        _storage = _WaitGroupState()
        _bodies = []
        _taskWaiters = []
    }

    @usableFromInline static var _countMask: UInt64 { (1 << 30) - 1 }
    @usableFromInline static var _waiting: UInt64 { 1 << 30 }
    @usableFromInline static var _notify: UInt64 { 1 << 31 }
    @usableFromInline static var _flags: UInt64 { _waiting | _notify }
    @usableFromInline static var _epochUnit: UInt64 { 1 << 32 }

    /// Pauses the leave that made the count zero before it processes the zero (tests only).
    internal var _zeroProcessingHook: (@Sendable () -> Void)?

    @inlinable @inline(__always)
    internal func _field<T>(_ field: KeyPath<_WaitGroupState, T>, as type: T.Type) -> UnsafeMutablePointer<T> {
        _stateField(of: self, field, as: type)
    }

    @inlinable @inline(__always) internal var _state: UnsafeMutablePointer<UInt64> { _field(\.state, as: UInt64.self) }
    @inlinable @inline(__always) internal var _listLock: UnsafeMutablePointer<UInt32> {
        _field(\.listLock, as: UInt32.self)
    }

    /// The epoch, the state word's high half: the futex word of sleeping waiters.
    @usableFromInline internal var _epochWord: UnsafeMutablePointer<UInt32> {
        #if _endian(little)
        UnsafeMutableRawPointer(_state).advanced(by: 4).assumingMemoryBound(to: UInt32.self)
        #else
        UnsafeMutableRawPointer(_state).assumingMemoryBound(to: UInt32.self)
        #endif
    }

    @inlinable @inline(__always)
    internal static func _isPending(_ state: UInt64) -> Bool {
        state & _countMask == 0 && state & _flags != 0
    }

    /// Tasks entered and not yet left: a snapshot.
    public var count: Int {
        // Relaxed: a snapshot that orders nothing.
        Int(ilk_atomic_load_u64(_state, ILK_ORDER_RELAXED) & WaitGroup._countMask)
    }

    /// Counts `count` more tasks in progress.
    /// - Warning: A count below 1 traps, and so does a count of more than 2^30 - 1 tasks in
    ///   progress at once.
    @inlinable @inline(__always)
    public func enter(_ count: Int = 1) {
        if _slowPath(count < 1) { _enterMisuse(count) }
        // The fast paths use Swift's atomics, not the shim's: an instruction in every caller, a
        // protocol witness included (Atomics/WordAtomics.swift).
        let state = _Word64.atomic(_state)
        // Relaxed: entering publishes nothing; each task's work is published by its leave.
        var old = state.pointee.load(ordering: .relaxed)
        while true {
            if _slowPath(WaitGroup._isPending(old)) { old = _awaitProcessedZero(); continue }
            if _slowPath(UInt64(count) > WaitGroup._countMask - (old & WaitGroup._countMask)) { _overflow(old, count) }
            // Relaxed (success and failure): as the load above.
            let (exchanged, found) = state.pointee.compareExchange(
                expected: old, desired: old &+ UInt64(count), ordering: .relaxed)
            if exchanged { return }
            old = found
        }
    }

    /// Counts one task as finished. The leave that brings the count to zero wakes the waiting
    /// threads and runs the bodies registered with ``notify(_:)``, on the calling thread.
    /// - Warning: More leaves than enters trap with a message.
    @inlinable @inline(__always)
    public func leave() {
        // Acq_rel: release publishes this task's work; acquire lets the leave that reaches
        // zero pass every task's work on (file comment).
        let old = _Word64.atomic(_state).pointee.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue
        let count = old & WaitGroup._countMask
        if _fastPath(count > 1 || (count == 1 && old & WaitGroup._flags == 0)) { return }
        _leaveSlow(old)
    }

    /// Blocks until the count is zero (at some instant during the call).
    ///
    /// Blocks the calling thread: unavailable in async code, where `try await wait()` suspends
    /// the task instead.
    @available(*, noasync, message: "blocks the thread; use 'try await wait()', which suspends the task")
    @inlinable
    public func wait() {
        // Acquire: pairs with the leaves' releases (file comment).
        if _fastPath(_Word64.atomic(_state).pointee.load(ordering: .acquiring) & WaitGroup._countMask == 0) {
            return
        }
        _waitUntimed()
    }

    /// Blocks until the count is zero, or until `deadline`.
    ///
    /// Never returns `false` before the deadline.
    /// - Returns: `true` when the count was zero, `false` when the deadline passed first.
    @available(*, noasync, message: "blocks the thread; use 'try await wait(before:)', which suspends the task")
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
        // Seq_cst: NOTIFY changes only under listLock; the CAS orders against the leaves.
        var old = ilk_atomic_load_u64(_state, ILK_ORDER_SEQ_CST)
        while old & WaitGroup._notify == 0 {
            if old & WaitGroup._countMask == 0 {
                // Zero, and nothing listed: no leave will take a list; run at once.
                _ = _MutexWord.unlock(listLock, for: .waitGroup)
                // The seq_cst load read the zero from the leaves' release sequence: their
                // work is visible to the body.
                body()
                return
            }
            if ilk_atomic_cas_strong_u64(_state, &old, old | WaitGroup._notify, ILK_ORDER_SEQ_CST, ILK_ORDER_SEQ_CST) {
                break
            }
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
        _zeroProcessingHook?()
        _inject(.waitGroupZero)
        _processZero()
    }

    /// Processes the PENDING zero this thread's leave made (file comment).
    internal func _processZero() {
        let listLock = _listLock
        _MutexWord.lock(listLock, for: .waitGroup)
        // Seq_cst: the CAS publishes the tasks' work (acquired by this thread's decrement) to
        // waiters that read the new epoch. Only NOTIFY could change under us, and it changes
        // only under listLock, which this thread holds: the loop runs once.
        var old = ilk_atomic_load_u64(_state, ILK_ORDER_SEQ_CST)
        var new: UInt64
        repeat {
            new = old & ~WaitGroup._flags
            if old & WaitGroup._waiting != 0 { new &+= WaitGroup._epochUnit }
        } while !ilk_atomic_cas_strong_u64(_state, &old, new, ILK_ORDER_SEQ_CST, ILK_ORDER_SEQ_CST)
        var bodies: [@Sendable () -> Void] = []
        var tasks: [_WaitGroupTaskWaiter] = []
        if old & WaitGroup._notify != 0 {
            swap(&bodies, &_bodies)
            tasks = _takeTaskWaiters()
        }
        _ = _MutexWord.unlock(listLock, for: .waitGroup)
        if old & WaitGroup._waiting != 0 { _Futex.wakeAll(_epochWord, for: .waitGroup) }
        for task in tasks {
            _TaskWait.resume(task.continuation.unsafelyUnwrapped, with: .served, at: task.outcome)
        }
        for body in bodies { body() }
    }

    /// Waits (pausing, then yielding) until a PENDING zero is processed; returns the state.
    @usableFromInline @inline(never)
    internal func _awaitProcessedZero() -> UInt64 {
        var rounds = 0
        while true {
            // Acquire: only to leave the loop; enter publishes and consumes nothing.
            let state = ilk_atomic_load_u64(_state, ILK_ORDER_ACQUIRE)
            if !WaitGroup._isPending(state) { return state }
            rounds += 1
            if rounds < 64 { ilk_spin_pause() } else { ilk_thread_yield() }
        }
    }

    /// `_waitSlow` without a deadline, for wait()'s inlined fast path.
    // Untimed: an inlined fast path that passed `deadline: nil` would build and destroy an
    // Optional<ContinuousClock.Instant> through its value witnesses on every call, fast path
    // included (ReadWriteLockSlowPaths.swift has the figure).
    @usableFromInline @inline(never)
    internal func _waitUntimed() { _ = _waitSlow(deadline: nil) }

    /// Sleeps until the count's zero is processed or `deadline` passes.
    @usableFromInline @inline(never)
    internal func _waitSlow(deadline: ContinuousClock.Instant?) -> Bool {
        #if INTERLOCK_CONTENTION
        let probe = _Contention.begin()
        let done = _waitForZero(deadline: deadline)
        if probe != 0 && done { _Contention.end(probe, .waitGroup, self) }
        return done
        #else
        return _waitForZero(deadline: deadline)
        #endif
    }

    /// `_waitSlow`'s wait.
    internal func _waitForZero(deadline: ContinuousClock.Instant?) -> Bool {
        // Seq_cst: the WAITING CAS below pairs with the zero-reaching decrement (file comment).
        var state = ilk_atomic_load_u64(_state, ILK_ORDER_SEQ_CST)
        while state & WaitGroup._waiting == 0 {
            if state & WaitGroup._countMask == 0 { return true }
            if ilk_atomic_cas_strong_u64(
                _state, &state, state | WaitGroup._waiting, ILK_ORDER_SEQ_CST, ILK_ORDER_SEQ_CST)
            {
                break
            }
        }
        // WAITING is set with count > 0 (the CAS, or a waiter before us in this cycle), or the
        // zero is PENDING; either way the epoch read here moves when this cycle's zero is
        // processed, and only then.
        if state & WaitGroup._countMask == 0 { return true }
        let observed = UInt32(truncatingIfNeeded: state >> 32)
        let epoch = _epochWord
        while true {
            let result =
                deadline.map { _Futex.wait(epoch, expected: observed, until: $0, for: .waitGroup) }
                ?? _Futex.wait(epoch, expected: observed, for: .waitGroup)
            // Seq_cst: reading a new epoch synchronizes with the processing CAS that wrote it.
            let now = ilk_atomic_load_u64(_state, ILK_ORDER_SEQ_CST)
            if UInt32(truncatingIfNeeded: now >> 32) != observed { return true }
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
