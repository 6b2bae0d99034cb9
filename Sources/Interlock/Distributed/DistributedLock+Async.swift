// DistributedLock+Async: lock(before:pollInterval:) for Swift concurrency. It polls as the
// blocking one does, but suspends the task between attempts instead of blocking its thread.
//
// Algorithm: the blocking `lock(before:pollInterval:)`'s polling loop (DistributedLock.swift),
// with `Task.sleep` in place of nanosleep. The same rules apply, through the one helper both
// call (`pollPause`):
//   - The first attempt is made at once: a deadline in the past makes the call a `tryLock()`.
//   - Then one attempt after each pause. A pause averages `pollInterval` with a random jitter
//     of ±25%; a non-positive interval means 1 ms, as in the blocking form (it does not trap).
//     The pause is cut so that it ends at the deadline at the latest, and one last attempt is
//     made there.
//   - `false` only once an attempt has failed with `ContinuousClock.now >= deadline`.
//   - A lock held by anyone, this object included, is waited for. A stale lock is not broken
//     here: `breakLockIfStale(olderThan:)` is the caller's decision, as in the blocking form.
//   - The errors `tryLock()` throws are rethrown at once.
//
// Cancellation. The lock is taken only by `tryLock()`, which returns at once, so a cancelled
// call never holds anything:
//   - An attempt that succeeds returns `true` whatever the task's state: a call that does not
//     have to wait is a `tryLock()`, even in a cancelled task.
//   - After a failed attempt the deadline is checked first (`false` when passed: there is no
//     wait left to cancel), then cancellation: `CancellationError`.
//   - Cancellation during a pause ends the `Task.sleep` with `CancellationError`, thrown as is,
//     with no further attempt.
//
// Timers: each pause sleeps until an absolute ContinuousClock instant, at most the deadline,
// with zero tolerance. With the default (nil) tolerance the runtime's Dispatch timer adds its
// own leeway, and the last pause could wake past the deadline.
//
// Memory ordering: no atomics here; `tryLock()`'s (DistributedLock.swift) do all the work.
//
// Overloads: a call written with `await` selects this form, and a call in synchronous code
// selects the blocking one, as before. In an async context a call without `await` is an error
// ("expression is 'async' but is not marked with 'await'"). It never selects the blocking
// form silently.

/// The async form of the blocking `lock(before:pollInterval:)`, which suspends the task between
/// attempts instead of blocking its thread.
extension DistributedLock {
    /// Takes the lock, polling until `deadline`; the task suspends between attempts and its
    /// thread stays free.
    ///
    /// Tries at once, then after each pause of about `pollInterval`, with a random jitter of
    /// ±25% so that many waiters do not retry in step, and once more at the deadline. No pause
    /// lasts past the deadline. A deadline in the past makes it a ``tryLock()``. Like the blocking
    /// form, it does not break a stale lock; see ``breakLockIfStale(olderThan:)``.
    ///
    /// Cancellation: an attempt that succeeds returns `true` even in a cancelled task (a call
    /// that need not wait is a ``tryLock()``). When it must wait and the task is cancelled,
    /// before a pause or during one, it throws `CancellationError` and holds nothing.
    ///
    /// - Parameters:
    ///   - deadline: when to give up.
    ///   - pollInterval: the mean time between attempts; non-positive values mean 1 ms.
    /// - Returns: `true` when the lock was taken, `false` when the deadline passed first (never
    ///   before it).
    /// - Throws: `CancellationError` when the task is cancelled while it waits (the lock is not
    ///   held then), and what ``tryLock()`` throws, at once.
    public func lock(
        before deadline: ContinuousClock.Instant,
        pollInterval: Duration = .milliseconds(10)
    ) async throws -> Bool {
        #if INTERLOCK_CONTENTION
        if try tryLock() { return true }
        // A first attempt that failed makes this a contended acquisition (ContentionRecorder.swift).
        let probe = _Contention.begin()
        let taken = try await _lock(before: deadline, pollInterval: pollInterval, firstTried: true, beforePause: {})
        if probe != 0 && taken { _Contention.end(probe, .distributedLock, address: _contentionKey, label: path) }
        return taken
        #else
        return try await _lock(before: deadline, pollInterval: pollInterval, beforePause: {})
        #endif
    }

    /// The async `lock(before:pollInterval:)`, with `beforePause` called after each failed
    /// attempt that leads to a pause, just before the cancellation check and the sleep (a test
    /// seam).
    internal func _lock(
        before deadline: ContinuousClock.Instant,
        pollInterval: Duration,
        firstTried: Bool = false,
        beforePause: () -> Void
    ) async throws -> Bool {
        var tried = firstTried  // the caller made the first attempt (contention profiling)
        while true {
            if !tried, try tryLock() { return true }
            tried = false
            let now = ContinuousClock.now
            if now >= deadline { return false }
            let wake = now + Self.pollPause(pollInterval, before: deadline, now: now)
            beforePause()
            // Not relying on Task.sleep to notice a cancellation that came before it: no
            // timer is armed for a task that is already cancelled.
            try Task.checkCancellation()
            try await Task.sleep(until: wake, tolerance: .zero, clock: .continuous)
        }
    }
}
