// Semaphore, waiting in Swift concurrency: a task that must wait for a unit is suspended (a
// continuation in the semaphore's FIFO list of waiters), never blocking its thread; threads and
// tasks wait in the same list and are served in one arrival order.
//
// The suspension itself (cancellation handler, continuation, the deadline's timer task) is
// TaskWait.swift's, shared with the other type; this file holds the waiter's state machine.
//
// Algorithm: the counter and the hand-off of Semaphore.swift, unchanged. A task whose decrement
// found no unit is committed, exactly as a thread is; instead of a record on its stack and a
// futex word, it queues a record inside a `_SemaphoreTaskWaiter` object (the list retains it
// while it is queued) that holds its continuation. A signal that meets a task's record at the
// head of the list resumes the continuation with the unit. Cancellation and deadlines abandon
// the wait: the task is resumed at once, and its commitment is undone (a withdrawal, as a timed
// thread's) or, when a signal has already counted for it, its record stays queued as a ghost
// whose unit is passed on to the next waiter when it arrives.
//
// A task waiter's state (guarded by listLock; a continuation is stored with `.queued`):
//
//   state      meaning                                  left by
//   ---------  ---------------------------------------  -------------------------------------
//   new        created; not yet in the list             enqueue (-> queued or resumed) or
//                                                       abandon (-> abandoned)
//   abandoned  cancelled or timed out before enqueue    enqueue: withdraws or queues a ghost
//              ran (the outcome is kept)                 and resumes with the outcome
//   queued     in the list, continuation stored         a grant (-> resumed, `.served`) or
//                                                       abandon (-> resumed, or ghost)
//   ghost      in the list, already resumed (cancelled  the grant that reaches it: unlinks it
//              or timed out); a signal counted for it   and passes the unit on (a signal)
//   resumed    resumed and out of the list              final
//
// Who does what:
//   - wait() async: the fast path is the sync one's (one atomic decrement); a committed task
//     suspends in `withUnsafeContinuation` inside `withTaskCancellationHandler`; the
//     continuation's closure enqueues: under listLock, a `pending` unit is taken at once,
//     otherwise the record is queued.
//   - abandon (the cancellation handler, or the deadline's timer task), under listLock: new ->
//     abandoned (enqueue will finish the job); queued -> withdraw (CAS count c -> c + 1 while
//     c < 0) and unlink, or, when the count is not negative (a signal has counted for the
//     committed waiters and will hand a unit to the head of the list, and in turn to this
//     record), leave the record queued as a ghost; either way resume with the outcome.
//   - the grant (Semaphore._handOff, under listLock): queued -> resumed, resume with the unit;
//     ghost -> resumed and pass the unit on: a signal of the granting thread's own (count + 1;
//     when that finds a committed waiter, hand again).
//   - an abandoned waiter that enqueue finds with a non-negative count takes a `pending` unit
//     and passes it on, or queues as a ghost.
//
// Invariants:
//   - Every continuation is resumed exactly once: it is stored under listLock, and resumed only
//     by the thread that, under listLock, moves the state out of `queued`, or by enqueue when it
//     does not queue (new or abandoned); each of those happens once per waiter.
//   - No unit is lost and none is given to an abandoned task: a task leaves the list either by
//     a withdrawal (its decrement undone: no signal is owed to it) or by a grant; a grant to a
//     ghost becomes a signal, which serves the next committed waiter or frees the unit. The
//     unit accounting is therefore the one of Semaphore.swift, whose proof does not depend on
//     what a record's owner does with the unit.
//   - A cancelled task holds no unit: it is resumed with `CancellationError` only from
//     `abandoned`, `queued` -> withdrawn, or ghost, none of which gives it a unit; a task whose
//     grant won the race (the grant took listLock first) returns normally, holding the unit.
//   - The waiter object lives while the task waits (its frame holds it), while it is queued (the
//     list's reference) and while the timer task may abandon it (the timer's capture): no state
//     is read after it is freed.
//
// Memory ordering: the counter's orderings are Semaphore.swift's (the fast path's decrement is
// acquire). A task's record, its state and its continuation are touched only under listLock
// (the mutex's acquire and release order them). A unit handed to a task is published by the
// signal's release increment, which the granting thread performed or acquired through listLock
// from the signalling thread, and the resumer's release store of the outcome word, which the
// resumed task loads with acquire (TaskWait.swift), carries it to the task.
//
// Costs: a wait that finds a unit free is the sync one's, one atomic instruction, no allocation.
// A task that must wait allocates its waiter object (and, for a deadline, a timer task); a
// cancelled or timed-out task walks the list to unlink its record (O(waiters)).

import CInterlock

/// A task waiting on a ``Semaphore``: its record in the list and its continuation (see
/// Semaphore+Async.swift). Every mutable field is guarded by the semaphore's listLock, hence
/// `@unchecked Sendable`: the cancellation handler and the timer task reach it from other threads.
@usableFromInline
internal final class _SemaphoreTaskWaiter: @unchecked Sendable {
    @usableFromInline
    internal enum State {
        case new
        case abandoned(_TaskWaitOutcome)
        case queued
        case ghost
        case resumed
    }

    // The record that the list links; the first stored property, at a stable address.
    @usableFromInline internal var _record = _SemaphoreWaiter()
    @usableFromInline internal var state = State.new
    @usableFromInline internal var continuation: UnsafeContinuation<Void, Never>?

    @usableFromInline internal init() {}

    /// The record's address, stable for the object's life.
    @usableFromInline internal var record: UnsafeMutablePointer<_SemaphoreWaiter> {
        // SAFETY: `_record` is the first stored property of this final class; objects never
        // move, and the caller holds a reference for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: _SemaphoreWaiter.self)
    }

    /// The word that carries how the wait ended (TaskWait.swift): the record's futex word,
    /// which a task's record does not otherwise use.
    @usableFromInline internal var outcome: UnsafeMutablePointer<UInt32> {
        Semaphore._wordOf(record)
    }
}

extension Semaphore {
    /// Takes a unit, suspending the task (not blocking its thread) until one is free.
    ///
    /// Threads blocked in the blocking `wait()` and tasks suspended here wait in one queue and
    /// get units in the order they joined it (FIFO among queued waiters; see ``Semaphore``'s
    /// fairness note for a waiter that is still joining). A call that finds a unit free takes it at once, even in a
    /// task that is already cancelled.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits; it then holds no
    ///   unit, and the unit a racing ``signal()`` meant for it goes to the next waiter.
    @inlinable
    public func wait() async throws {
        // Acquire: pairs with the release increment of the signal that freed the unit.
        if _fastPath(ilk_atomic_fetch_sub_i64(_count, 1, ILK_ORDER_ACQUIRE) > 0) { return }
        if try await _waitAsync(deadline: nil) { return }
        preconditionFailure("Semaphore: internal error, a wait without a deadline timed out")
    }

    /// Takes a unit, suspending the task until one is free or until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryWait()``. No thread sleeps for the deadline: a task suspended on the clock abandons
    /// the wait when it passes.
    ///
    /// - Returns: `true` when the caller took a unit, `false` when the deadline passed first
    ///   (then it holds none).
    /// - Throws: `CancellationError` when the task is cancelled while it waits (then it holds
    ///   none).
    @inlinable
    public func wait(before deadline: ContinuousClock.Instant) async throws -> Bool {
        if ContinuousClock.now >= deadline { return tryWait() }
        // Acquire: as in wait().
        if _fastPath(ilk_atomic_fetch_sub_i64(_count, 1, ILK_ORDER_ACQUIRE) > 0) { return true }
        return try await _waitAsync(deadline: deadline)
    }

    /// Runs `body` holding a unit: waits for one (suspending the task), runs `body`, and signals
    /// the unit back when `body` returns or throws.
    ///
    /// ```swift
    /// let downloads = Semaphore(value: 4)   // at most four at a time
    /// let data = try await downloads.withPermit { try await fetch(url) }
    /// ```
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor, where `body` runs (inferred).
    ///   - body: The work to do while holding the unit.
    /// - Returns: What `body` returned.
    /// - Throws: `CancellationError` when the task is cancelled while it waits for the unit
    ///   (`body` does not run), or what `body` threw.
    @inlinable
    public func withPermit<R>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> R
    ) async throws -> R {
        try await wait()
        defer { signal() }
        return try await body()
    }

    // MARK: - Slow paths

    /// A task's committed wait: suspends until granted, cancelled or past `deadline`.
    /// - Returns: `true` when granted, `false` when the deadline passed.
    @usableFromInline @inline(never)
    internal func _waitAsync(deadline: ContinuousClock.Instant?) async throws -> Bool {
        #if INTERLOCK_CONTENTION
        let probe = _Contention.begin()
        let taken = try await _suspendQueued(deadline: deadline)
        if probe != 0 && taken { _recordWait(probe, async: true) }
        return taken
        #else
        return try await _suspendQueued(deadline: deadline)
        #endif
    }

    /// `_waitAsync`'s queueing and suspension.
    internal func _suspendQueued(deadline: ContinuousClock.Instant?) async throws -> Bool {
        let waiter = _SemaphoreTaskWaiter()
        return try await _TaskWait.suspend(deadline: deadline, owner: waiter, outcome: waiter.outcome) { continuation in
            _enqueue(waiter, continuation)
        } abandon: { [self] outcome in
            _abandon(waiter, outcome)
        }
    }

    /// Queues a committed task's record (or serves it from `pending`, or finishes an abandon
    /// that came first); resumes the continuation unless the record is left waiting.
    internal func _enqueue(
        _ waiter: _SemaphoreTaskWaiter, _ continuation: UnsafeContinuation<Void, Never>
    ) {
        let listLock = _listLock
        _MutexWord.lock(listLock, for: .semaphore)
        switch waiter.state {
        case .new:
            if _pending.pointee > 0 {
                _pending.pointee -= 1
                waiter.state = .resumed
                _ = _MutexWord.unlock(listLock, for: .semaphore)
                _TaskWait.resume(continuation, with: .served, at: waiter.outcome)
                return
            }
            waiter.continuation = continuation
            waiter.state = .queued
            _queue(waiter)
            _ = _MutexWord.unlock(listLock, for: .semaphore)
        case .abandoned(let outcome):
            // Cancelled or timed out before queueing: undo the decrement if no signal counted
            // for it; else take the unit owed (pending) and pass it on, or queue as a ghost.
            var passOn = false
            if _withdraw() {
                waiter.state = .resumed
            } else if _pending.pointee > 0 {
                _pending.pointee -= 1
                waiter.state = .resumed
                passOn = true
            } else {
                waiter.state = .ghost
                _queue(waiter)
            }
            _ = _MutexWord.unlock(listLock, for: .semaphore)
            _TaskWait.resume(continuation, with: outcome, at: waiter.outcome)
            if passOn { signal() }
        case .queued, .ghost, .resumed:
            preconditionFailure("Semaphore: internal error, a task's wait was enqueued twice")
        }
    }

    /// Appends a task's record to the list, which retains the waiter. Under listLock.
    internal func _queue(_ waiter: _SemaphoreTaskWaiter) {
        let record = waiter.record
        record.pointee.task = Unmanaged.passRetained(waiter)
        record.pointee.next = nil
        if let last = _tail.pointee { last.pointee.next = record } else { _head.pointee = record }
        _tail.pointee = record
        _queued.pointee += 1
    }

    /// Abandons a task's wait (cancelled, or its deadline passed): resumes it with `outcome`
    /// unless its grant or an earlier abandon came first (the file comment).
    internal func _abandon(_ waiter: _SemaphoreTaskWaiter, _ outcome: _TaskWaitOutcome) {
        let listLock = _listLock
        _MutexWord.lock(listLock, for: .semaphore)
        switch waiter.state {
        case .new:
            waiter.state = .abandoned(outcome)
            _ = _MutexWord.unlock(listLock, for: .semaphore)
        case .queued:
            let continuation = waiter.continuation.unsafelyUnwrapped
            waiter.continuation = nil
            if _withdraw() {
                let record = waiter.record
                _unlinkQueued(record)
                record.pointee.task.unsafelyUnwrapped.release()  // the list's reference
                record.pointee.task = nil
                waiter.state = .resumed
            } else {
                waiter.state = .ghost
            }
            _ = _MutexWord.unlock(listLock, for: .semaphore)
            _TaskWait.resume(continuation, with: outcome, at: waiter.outcome)
        case .abandoned, .ghost, .resumed:
            _ = _MutexWord.unlock(listLock, for: .semaphore)
        }
    }

    /// The grant of a unit to a task's record, just unlinked by `_handOff` (under listLock,
    /// which this releases). - Returns: `true` when the task took the unit; `false` when the
    /// record was a ghost and the caller must pass the unit on.
    @usableFromInline
    internal func _grant(_ waiter: _SemaphoreTaskWaiter) -> Bool {
        waiter.record.pointee.task = nil
        switch waiter.state {
        case .queued:
            let continuation = waiter.continuation.unsafelyUnwrapped
            waiter.continuation = nil
            waiter.state = .resumed
            _ = _MutexWord.unlock(_listLock, for: .semaphore)
            _TaskWait.resume(continuation, with: .served, at: waiter.outcome)
            return true
        case .ghost:
            waiter.state = .resumed
            _ = _MutexWord.unlock(_listLock, for: .semaphore)
            return false
        case .new, .abandoned, .resumed:
            preconditionFailure("Semaphore: internal error, a task's record was granted twice")
        }
    }
}
