// PostgresLock in Swift concurrency: the async forms, which suspend the task and never block a
// thread of the cooperative pool (the round trips go through libpq's asynchronous interface and
// the reactor, Async/), and waitUntilLost(), the signal that a held lock is gone.
//
// One call at a time: every call, blocking or async, holds the object's gate (a Semaphore of
// one unit) while it uses the session; an async call waits for the gate as a task (Interlock's
// Semaphore suspends it). The gate's holder is the only one that touches the session.
//
// The idle watcher (for waitUntilLost): while the lock is held, some task waits for its loss and
// no call runs, the session's socket is registered with the reactor. When it becomes readable or
// fails (the server ended the session: pg_terminate_backend, a shutdown or restart, a crash; the
// kernel gave up on the connection: client keepalives or tcp_user_timeout after a partition),
// the reactor's thread starts a task that waits for the gate like any call (`checkIdle`), then
// unregisters the watcher (its registration may have been made again meanwhile), reads what
// arrived, records the loss if the session ended, and settles. A call that holds the gate
// unregisters the watcher first and registers it again when it ends (`settle`), and notices a
// dead session itself. Whoever finds the lock no longer held (lost, or released by unlock)
// resumes every loss waiter, under the gate.
//
//   watcher    held   loss waiters   gate
//   off        no     any            -        waiters are resumed when they register or at once
//   off        yes    none           -        nothing to watch for
//   on         yes    some           free     the reactor watches the socket
//   off        yes    some           taken    the call in progress re-registers when it ends
//
// Regression: the handler used to take the gate with tryWait and drop the event when the gate
// was taken. The gate is still held when `settle` or waitUntilLost registers the watcher, and a
// socket that is already at its end (the server stopped before the waiter registered) fires at
// once: the event was dropped, and the waiter never returned (seen in a full test run).

import Interlock
import Synchronization

extension PostgresLock {
    // MARK: - Async forms

    /// Takes the lock if no session holds it, without waiting in the server: one round trip,
    /// during which the task is suspended and its thread free.
    ///
    /// - Returns: `true` when this call took the lock, `false` when anyone holds it, this object
    ///   included (as ``tryLock()-9dozi`` does).
    /// - Throws: what ``tryLock()-9dozi`` throws; `CancellationError` when the task was cancelled
    ///   while it waited for another call on this object to end.
    public func tryLock() async throws -> Bool {
        if let engine { return try await gateAsync { try await engineAcquire(engine, "tryLock", nil) } }
        return try await exclusivelyAsync { session in
            guard !session.held else { return false }
            guard let acquired = try await session.acquireAsync(operation: "tryLock", waitingUntil: nil, box: box)
            else { return false }
            // Release: pairs with fencingToken's acquire load.
            token.store(acquired, ordering: .releasing)
            return true
        }
    }

    /// Takes the lock, waiting in the server's queue until `deadline` at most, with the task
    /// suspended (no thread waits).
    ///
    /// - Returns: `true` when the lock was taken; `false` when the deadline passed first (never
    ///   before it).
    /// - Throws: what ``lock(before:pollInterval:)`` throws; `CancellationError` when the task is
    ///   cancelled: the wait in the server is cancelled (a cancel request), and the lock is not
    ///   held afterwards, even when the server granted it as the cancellation arrived (it is
    ///   then released before the error is thrown).
    public func lock(before deadline: ContinuousClock.Instant) async throws -> Bool {
        if let engine { return try await gateAsync { try await engineAcquire(engine, "lock(before:)", deadline) } }
        return try await exclusivelyAsync { session in
            guard !session.held else { return false }
            guard
                let acquired = try await session.acquireAsync(
                    operation: "lock(before:)", waitingUntil: deadline, box: box)
            else { return false }
            // Release: as in tryLock().
            token.store(acquired, ordering: .releasing)
            return true
        }
    }

    /// Releases the lock held by this object: one round trip, the task suspended meanwhile.
    ///
    /// Afterwards the object does not hold the lock, whatever the outcome.
    /// - Throws: what ``unlock()-8ydsa`` throws; `CancellationError` only when the task was cancelled
    ///   before its turn came (another call on this object was running): then nothing changed.
    public func unlock() async throws {
        if let engine { return try await engineRelease(engine) }
        try await exclusivelyAsync { session in
            // Relaxed: the token is only cleared; nothing is published with the zero.
            token.store(0, ordering: .relaxed)
            try await session.releaseAsync()
        }
    }

    /// Asks the server whether this object's session still holds the lock, as ``checkHeld()-5fab1``
    /// does, with the task suspended during the round trip.
    public func checkHeld() async throws -> Bool {
        if let engine { return try await engineCheck(engine) }
        return try await exclusivelyAsync { session in try await session.checkHeldAsync() }
    }

    /// Takes the lock (waiting until `deadline` at most), runs `body` with the acquisition's
    /// fencing token, and releases the lock, also when `body` throws.
    ///
    /// ```swift
    /// let done = try await lock.withLock(before: .now + .seconds(30)) { token in
    ///     try await reports.publish(tonight, fencingToken: token)
    /// }
    /// if done == nil { print("someone else is publishing") }
    /// ```
    /// - Returns: what `body` returned, or `nil` when the deadline passed before the lock was
    ///   taken (then `body` did not run).
    /// - Throws: what `body` throws (the lock released first); else what the release throws,
    ///   notably ``PostgresLockError/Code/lockLost`` when the session died while `body` ran: its
    ///   work was then done without the lock, and the caller must know; what
    ///   ``lock(before:)`` throws.
    public func withLock<R>(
        before deadline: ContinuousClock.Instant, _ body: (_ fencingToken: Int64) async throws -> R
    ) async throws -> R? {
        guard try await lock(before: deadline) else { return nil }
        // Acquire: pairs with the release store of the acquisition above (same task: ordered).
        let current = token.load(ordering: .acquiring)
        let result: R
        do {
            result = try await body(current)
        } catch {
            try? await releaseEvenIfCancelled()
            throw error
        }
        try await releaseEvenIfCancelled()
        return result
    }

    /// unlock() for withLock: a cancelled task still gives the lock back (its turn on the gate
    /// is waited for without cancellation: the only other calls on a held object are short).
    private func releaseEvenIfCancelled() async throws {
        if Task.isCancelled {
            // A child task is not cancelled with its parent's cancellation: wait there.
            try await Task { try await self.unlock() }.value
        } else {
            try await unlock()
        }
    }

    /// Returns once the lock that this object holds now is lost: its session ended (the server
    /// restarted or crashed, `pg_terminate_backend`, or the connection failed, which after a
    /// partition the TCP keepalives notice within about 30 s). The moment to stop the work the
    /// lock protects.
    ///
    /// A signal, not a poll: the object's socket is watched (epoll) while the lock is held and
    /// no other call runs on the object. Also returns at once when the object does not hold the
    /// lock, when ``unlock()-8ydsa`` releases it, and when the task is cancelled; ``fencingToken`` is
    /// `nil` afterwards exactly when the lock is gone.
    ///
    /// ```swift
    /// guard try await lock.lock(before: .now + .seconds(10)) else { return }
    /// try await withThrowingTaskGroup(of: Void.self) { group in
    ///     group.addTask { try await job.run() }
    ///     group.addTask { await lock.waitUntilLost(); throw JobError.lockLost }
    ///     try await group.next()
    ///     group.cancelAll()
    /// }
    /// ```
    public func waitUntilLost() async {
        if let engine {
            await engine.waitUntilLost()
            // Relaxed: the token is only cleared; nothing is published with the zero.
            if !engine.isHeldAndAlive { token.store(0, ordering: .relaxed) }
            return
        }
        do { try await gate.wait() } catch { return }  // cancelled before its turn
        let session = box.session
        guard session.heldAndAlive else {
            gate.signal()
            return
        }
        let id = lossWaiters.reserve()
        await withTaskCancellationHandler {
            await _PGResumption.suspend { continuation, resumption in
                // Still under the gate: registered before any call can end the acquisition.
                lossWaiters.add(id, continuation, resumption)
                session.startWatching { [weak self] in self?.watcherFired() }
                gate.signal()
            }
        } onCancel: {
            lossWaiters.cancel(id)
        }
    }

    /// How many tasks wait in `waitUntilLost()` (tests).
    var lossWaiterCount: Int { lossWaiters.count }

    // MARK: - One call at a time

    /// Runs `body` on the session with the gate held (blocking for its turn).
    func exclusively<R>(_ body: (_PostgresSession) throws(PostgresLockError) -> R) throws(PostgresLockError) -> R {
        gate.wait()
        let session = box.session
        session.stopWatching()
        defer {
            settle(session)
            gate.signal()
        }
        return try body(session)
    }

    /// Runs `body` on the session with the gate held (suspending for its turn).
    func exclusivelyAsync<R>(_ body: (_PostgresSession) async throws -> R) async throws -> R {
        try await gate.wait()
        let session = box.session
        session.stopWatching()
        defer {
            settle(session)
            gate.signal()
        }
        return try await body(session)
    }

    /// After a call (the gate held): an acquisition that ended (lost, or released) clears the
    /// token and resumes the loss waiters; a held lock with waiters is watched again.
    private func settle(_ session: _PostgresSession) {
        if !session.heldAndAlive {
            // Relaxed: the token is only cleared; nothing is published with the zero.
            token.store(0, ordering: .relaxed)
            lossWaiters.resumeAll()
        } else if lossWaiters.hasWaiters {
            session.startWatching { [weak self] in self?.watcherFired() }
        }
    }

    /// The reactor's call when the idle session's socket became readable or failed. The check
    /// needs the gate: when it is free, the reactor's thread makes the check itself (a few
    /// non-blocking libpq calls), so that noticing a loss does not wait for a thread of the
    /// cooperative pool (a CI run, with synchronous tests blocking both, measured 14.3 s between
    /// `pg_terminate_backend` and `waitUntilLost()` returning when a task made every check). When
    /// the gate is held, the usual holder is the call that is registering the watcher, which
    /// releases it within microseconds (waitUntilLost signals the gate right after it starts
    /// watching, and a socket already at its end fires at once): the reactor's thread waits for
    /// the gate up to `watcherGatePatience` (1 ms) before it hands the check to a task. Another
    /// CI run measured 11.2 s with the task alone, the event having fired in that window. A
    /// longer holder (a call in progress) settles the session itself when it ends; the task
    /// still covers it, so no event is dropped. The reactor's other sockets wait at most 1 ms.
    private func watcherFired() {
        if gate.tryWait() || gate.wait(before: .now + PostgresLock.watcherGatePatience) {
            checkIdleHoldingTheGate()
        } else {
            Task { await self.checkIdle() }
        }
    }

    /// How long the reactor's thread waits for a held gate when the idle watcher fires.
    static var watcherGatePatience: Duration { .milliseconds(1) }

    /// Reads what arrived on the idle session, records a loss, and settles (under the gate).
    func checkIdle() async {
        // Not cancellable: an unstructured task that no one cancels.
        do { try await gate.wait() } catch { return }
        checkIdleHoldingTheGate()
    }

    /// `checkIdle` once the gate is held; releases it.
    private func checkIdleHoldingTheGate() {
        let session = box.session
        session.stopWatching()
        session.pollIdle()
        settle(session)
        gate.signal()
    }
}

/// The tasks in `PostgresLock.waitUntilLost()`: each resumed exactly once, by `resumeAll` (the
/// acquisition ended) or by `cancel` (its task was cancelled), whichever comes first.
///
/// An entry is `reserved` from `reserve()` until `add` brings its continuation (`waiting`); a
/// cancellation that comes first marks it `cancelled`, and `add` then resumes it at once.
final class _PGLossWaiters: Sendable {
    private enum Entry {
        case reserved
        case cancelled
        case waiting(UnsafeContinuation<Void, Never>, _PGResumption)
    }
    private struct State {
        var next: UInt64 = 0
        var entries: [UInt64: Entry] = [:]
    }
    private let state = _PGProtected(State())

    /// How many tasks wait (reserved entries count: they are about to).
    var count: Int { state.withLock { $0.entries.count } }

    /// Whether some task waits (reserved entries count: they are about to).
    var hasWaiters: Bool { state.withLock { !$0.entries.isEmpty } }

    func reserve() -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.entries[state.next] = .reserved
            return state.next
        }
    }

    func add(_ id: UInt64, _ continuation: UnsafeContinuation<Void, Never>, _ resumption: _PGResumption) {
        let resumeNow = state.withLock { state -> Bool in
            if case .cancelled = state.entries[id] {
                state.entries[id] = nil
                return true
            }
            state.entries[id] = .waiting(continuation, resumption)
            return false
        }
        if resumeNow { resumption.resume(continuation) }
    }

    func cancel(_ id: UInt64) {
        let waiter = state.withLock { state -> (UnsafeContinuation<Void, Never>, _PGResumption)? in
            switch state.entries[id] {
            case .reserved:
                state.entries[id] = .cancelled
                return nil
            case .waiting(let continuation, let resumption):
                state.entries[id] = nil
                return (continuation, resumption)
            case .cancelled, nil:
                return nil
            }
        }
        if let (continuation, resumption) = waiter { resumption.resume(continuation) }
    }

    /// Resumes every waiting task. Called under the gate, as `reserve` and `add` are (one call
    /// of waitUntilLost, before it lets the gate go), so no entry is reserved meanwhile.
    func resumeAll() {
        let waiters = state.withLock { state -> [(UnsafeContinuation<Void, Never>, _PGResumption)] in
            var resumed: [(UnsafeContinuation<Void, Never>, _PGResumption)] = []
            for (id, entry) in state.entries {
                if case .waiting(let continuation, let resumption) = entry {
                    resumed.append((continuation, resumption))
                    state.entries[id] = nil
                }
            }
            return resumed
        }
        for (continuation, resumption) in waiters { resumption.resume(continuation) }
    }
}
