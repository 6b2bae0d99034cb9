// WaitGroup, waiting in Swift concurrency: a task waits for the count to reach zero suspended
// (a continuation in the group's list), never blocking its thread.
//
// The suspension itself (cancellation handler, continuation, the deadline's timer task) is
// TaskWait.swift's, shared with the other type; this file holds the waiter's state machine.
//
// Algorithm: a task's wait is a `notify` that can be taken back. It registers under listLock
// exactly as `notify(_:)` does: when the count is zero and no zero is pending it returns at
// once; otherwise it sets NOTIFY (or finds it set) and appends its waiter object to
// `_taskWaiters`, which the processing of the next zero (`_processZero`, WaitGroup.swift) takes
// with the bodies, under listLock, and resumes after releasing it. Cancellation removes the
// waiter from the list under listLock and resumes it with `CancellationError`; a deadline does
// the same from a timer task suspended on the clock. NOTIFY may then stay set with an empty
// list: the next zero takes the empty list and clears it (a few instructions more), so the
// invariant of WaitGroup.swift weakens to "a listed body or task implies NOTIFY".
//
// A task waiter's state (guarded by listLock):
//
//   state      meaning                                      left by
//   ---------  -------------------------------------------  ---------------------------------
//   new        created, not yet registered                  register (-> listed, or resumed
//                                                           when the count is zero) or abandon
//                                                           (-> abandoned)
//   abandoned  cancelled or timed out before registering    register: resumes with the outcome
//   listed     in `_taskWaiters`, continuation stored        the zero's processing (-> resumed,
//                                                           `.served`) or abandon (-> resumed)
//   resumed    final
//
// Invariants:
//   - Every continuation is resumed exactly once: it is stored (listed) and taken (by the zero's
//     processing, or by abandon) only under listLock, each once; register resumes only the
//     continuations it does not store.
//   - No early return: a waiter listed during a cycle is taken only by the processing of a zero
//     that comes after its registration (the argument for bodies in WaitGroup.swift).
//   - No lost wake-up: a waiter that registers while the count is non-zero (or a zero is
//     pending) sets or finds NOTIFY under listLock; the leave that makes the count zero finds
//     NOTIFY in its decrement and processes the zero, taking the list.
//
// Memory ordering: registration reads the state with a seq_cst load or CAS under listLock, as
// `notify` does: reading a zero there synchronizes with the leaves (their release sequence), so
// the tasks' work is visible when the waiter returns at once. A listed waiter is resumed by the
// zero-reaching leave after its acq_rel decrement (which acquired every leave's work), and the
// release store of the outcome word, which the task loads with acquire (TaskWait.swift),
// carries it to the task, as it does on the other paths.

import CInterlock

/// A task waiting on a ``WaitGroup`` (WaitGroup+Async.swift). Every mutable field is guarded by
/// the group's listLock, hence `@unchecked Sendable`: the cancellation handler and the timer task
/// reach it from other threads.
@usableFromInline
internal final class _WaitGroupTaskWaiter: @unchecked Sendable {
    @usableFromInline
    internal enum State {
        case new
        case abandoned(_TaskWaitOutcome)
        case listed
        case resumed
    }

    // How the wait ended (TaskWait.swift); the first stored property, at a stable address.
    @usableFromInline internal var _outcome: UInt32 = 0
    @usableFromInline internal var state = State.new
    @usableFromInline internal var continuation: UnsafeContinuation<Void, Never>?

    @usableFromInline internal init() {}

    /// The outcome word's address, stable for the object's life.
    @usableFromInline internal var outcome: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_outcome` is the first stored property of this final class; objects never
        // move, and the caller holds a reference for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }
}

extension WaitGroup {
    /// Suspends the task (not blocking its thread) until the count is zero, at some instant
    /// during the call.
    ///
    /// Returns at once when the count is zero. Threads in the blocking `wait()` and tasks here may wait on
    /// the same group; the zero resumes them all.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits.
    @inlinable
    public func wait() async throws {
        // Acquire: pairs with the leaves' releases (WaitGroup.swift).
        if _fastPath(ilk_atomic_load_u64(_state, ILK_ORDER_ACQUIRE) & WaitGroup._countMask == 0) { return }
        _ = try await _waitAsync(deadline: nil)
    }

    /// Suspends the task until the count is zero, or until `deadline`.
    ///
    /// Never returns `false` before the deadline. No thread sleeps for the deadline: a task
    /// suspended on the clock abandons the wait when it passes.
    ///
    /// - Returns: `true` when the count was zero, `false` when the deadline passed first.
    /// - Throws: `CancellationError` when the task is cancelled while it waits.
    @inlinable
    public func wait(before deadline: ContinuousClock.Instant) async throws -> Bool {
        // Acquire: as in wait().
        if _fastPath(ilk_atomic_load_u64(_state, ILK_ORDER_ACQUIRE) & WaitGroup._countMask == 0) { return true }
        if ContinuousClock.now >= deadline { return false }
        return try await _waitAsync(deadline: deadline)
    }

    /// A task's wait that found the count non-zero. - Returns: `false` when the deadline passed.
    @usableFromInline @inline(never)
    internal func _waitAsync(deadline: ContinuousClock.Instant?) async throws -> Bool {
        #if INTERLOCK_CONTENTION
        let probe = _Contention.begin()
        let done = try await _suspendForZero(deadline: deadline)
        if probe != 0 && done { _Contention.end(probe, .waitGroupAsync, self) }
        return done
        #else
        return try await _suspendForZero(deadline: deadline)
        #endif
    }

    /// `_waitAsync`'s suspension.
    internal func _suspendForZero(deadline: ContinuousClock.Instant?) async throws -> Bool {
        let waiter = _WaitGroupTaskWaiter()
        return try await _TaskWait.suspend(deadline: deadline, owner: waiter, outcome: waiter.outcome) { continuation in
            _register(waiter, continuation)
        } abandon: { [self] outcome in
            _abandon(waiter, outcome)
        }
    }

    /// Lists a task's waiter for the next zero, or resumes it at once (the count is zero, or an
    /// abandon came first).
    internal func _register(
        _ waiter: _WaitGroupTaskWaiter, _ continuation: UnsafeContinuation<Void, Never>
    ) {
        let listLock = _listLock
        _MutexWord.lock(listLock, for: .waitGroup)
        if case .abandoned(let outcome) = waiter.state {
            waiter.state = .resumed
            _ = _MutexWord.unlock(listLock, for: .waitGroup)
            _TaskWait.resume(continuation, with: outcome, at: waiter.outcome)
            return
        }
        // Seq_cst: as in notify(_:); NOTIFY changes only under listLock.
        var old = ilk_atomic_load_u64(_state, ILK_ORDER_SEQ_CST)
        while old & WaitGroup._notify == 0 {
            if old & WaitGroup._countMask == 0 {
                // Zero and nothing pending: the seq_cst load read it from the leaves' release
                // sequence, so their work is visible to the task.
                waiter.state = .resumed
                _ = _MutexWord.unlock(listLock, for: .waitGroup)
                _TaskWait.resume(continuation, with: .served, at: waiter.outcome)
                return
            }
            if ilk_atomic_cas_strong_u64(_state, &old, old | WaitGroup._notify, ILK_ORDER_SEQ_CST, ILK_ORDER_SEQ_CST) {
                break
            }
        }
        waiter.continuation = continuation
        waiter.state = .listed
        _taskWaiters.append(waiter)
        _ = _MutexWord.unlock(listLock, for: .waitGroup)
    }

    /// Takes a task's wait back (cancelled, or its deadline passed) unless the zero or an
    /// earlier abandon came first.
    internal func _abandon(_ waiter: _WaitGroupTaskWaiter, _ outcome: _TaskWaitOutcome) {
        let listLock = _listLock
        _MutexWord.lock(listLock, for: .waitGroup)
        switch waiter.state {
        case .new:
            waiter.state = .abandoned(outcome)
            _ = _MutexWord.unlock(listLock, for: .waitGroup)
        case .listed:
            let index = _taskWaiters.firstIndex { $0 === waiter }.unsafelyUnwrapped
            _taskWaiters.remove(at: index)
            let continuation = waiter.continuation.unsafelyUnwrapped
            waiter.continuation = nil
            waiter.state = .resumed
            _ = _MutexWord.unlock(listLock, for: .waitGroup)
            _TaskWait.resume(continuation, with: outcome, at: waiter.outcome)
        case .abandoned, .resumed:
            _ = _MutexWord.unlock(listLock, for: .waitGroup)
        }
    }

    /// Tests only: the tasks listed now.
    internal var _taskWaitersSnapshot: Int {
        _MutexWord.lock(_listLock, for: .waitGroup)
        defer { _ = _MutexWord.unlock(_listLock, for: .waitGroup) }
        return _taskWaiters.count
    }

    /// Empties `_taskWaiters` for the zero being processed. Under listLock.
    /// - Returns: the waiters, whose continuations the caller resumes after releasing the lock.
    internal func _takeTaskWaiters() -> [_WaitGroupTaskWaiter] {
        if _taskWaiters.isEmpty { return [] }
        var taken: [_WaitGroupTaskWaiter] = []
        swap(&taken, &_taskWaiters)
        for waiter in taken { waiter.state = .resumed }
        return taken
    }
}
