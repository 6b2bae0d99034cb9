// PostgresSemaphore's waiting acquisition: LISTEN, try, sleep until a notification or the
// recheck interval, try again (the protocol and its argument: PostgresSemaphoreSQL.swift).
//
// The sleep is a timed wait for the session's socket in the reactor (`readable(_:until:)`): the
// socket is registered as a watch; three parties race to end the wait, and the one that removes
// the registration (the reactor's thread when the socket fires, the timer task, the task's
// cancellation handler, each through the reactor's mutex) resumes the task, exactly once:
//
//   registered   fired by          resumes   then
//   yes          socket readable   reactor   the timer task is cancelled
//   yes          timer             timer     -
//   yes          cancellation      handler   the timer task is cancelled
//   no           (lost the race)   -         nothing: the winner resumes
//
// A cancellation that comes before the registration finds nothing to remove; the registering
// code checks for it after registering and removes the registration itself.

import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension _PGConnection {
    /// Reads what arrived without blocking and frees the notifications libpq has collected.
    /// - Returns: whether there was at least one (false also when the connection failed: the
    ///   next statement finds that out).
    func takeNotifications() -> Bool {
        guard let handle = try? usableHandle() else { return false }
        _ = PQconsumeInput(handle)
        var any = false
        while let notification = PQnotifies(handle) {
            PQfreemem(notification)
            any = true
        }
        return any
    }
}

/// The end of one timed socket wait: whoever removed the reactor registration resumes it.
private final class _PGTimedWait: Sendable {
    private struct State {
        var continuation: (UnsafeContinuation<Void, Never>, _PGResumption)?
        var timer: Task<Void, Never>?
        var finished = false
    }
    private let state = _PGProtected(State())

    init(_ continuation: UnsafeContinuation<Void, Never>, _ resumption: _PGResumption) {
        state.withLock { $0.continuation = (continuation, resumption) }
    }

    /// Ends the wait: the reactor fired (it removed the registration), or there was none.
    func finish() {
        end(state.withLock { state in take(&state) })
    }

    /// Ends the wait if it has not ended and `removeRegistration` removes the registration (the
    /// timer, a cancellation). Under this wait's lock, an unfinished wait's fd has no
    /// registration but its own (the task registers again only after it resumed), so a late
    /// timer never removes a later wait's registration.
    func expire(_ removeRegistration: () -> Bool) {
        end(
            state.withLock { state in
                guard !state.finished, removeRegistration() else { return (nil, nil) }
                return take(&state)
            })
    }

    /// Keeps the timer task to cancel it when another party ends the wait first.
    func setTimer(_ timer: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            if state.finished { return true }
            state.timer = timer
            return false
        }
        if cancelNow { timer.cancel() }
    }

    private func take(_ state: inout State) -> ((UnsafeContinuation<Void, Never>, _PGResumption)?, Task<Void, Never>?) {
        state.finished = true
        defer {
            state.continuation = nil
            state.timer = nil
        }
        return (state.continuation, state.timer)
    }

    private func end(_ taken: ((UnsafeContinuation<Void, Never>, _PGResumption)?, Task<Void, Never>?)) {
        taken.1?.cancel()
        if let (continuation, resumption) = taken.0 { resumption.resume(continuation) }
    }
}

extension _PGReactor {
    /// Suspends the task until `fd` is readable (or fails), `deadline` passes, or the task is
    /// cancelled, whichever comes first; the caller finds out which (see the file comment).
    func readable(_ fd: Int32, until deadline: ContinuousClock.Instant) async {
        let registered = _PGProtected<_PGTimedWait?>(nil)
        await withTaskCancellationHandler {
            await _PGResumption.suspend { continuation, resumption in
                let wait = _PGTimedWait(continuation, resumption)
                guard watch(fd, { wait.finish() }) else {
                    wait.finish()  // not watchable (closed): the caller's next statement fails
                    return
                }
                registered.withLock { $0 = wait }
                if Task.isCancelled {
                    wait.expire { cancel(fd: fd) }  // cancelled before the handler could see it
                    return
                }
                wait.setTimer(
                    Task { [self] in
                        try? await Task.sleep(until: deadline, clock: .continuous)
                        wait.expire { cancel(fd: fd) }
                    })
            }
        } onCancel: {
            registered.withLock { $0 }?.expire { cancel(fd: fd) }
        }
    }
}

extension _PostgresSession {
    /// The slots in the order to try them this time: a random rotation, so that acquirers
    /// spread over the slots.
    func slotOrder() -> String {
        let keys = slots ?? []
        let start = keys.isEmpty ? 0 : Int.random(in: 0..<keys.count)
        return _PostgresSemaphoreSQL.slotArray(Array(keys[start...] + keys[..<start]))
    }

    /// One try of every slot (blocking). - Returns: the token, or nil when none was free.
    func tryPermit(operation: String) throws(PostgresLockError) -> Int64? {
        precondition(!held, "PostgresSemaphore: internal error, acquiring while held")
        let order = slotOrder()
        return try attempt(
            operation: operation, retryOnLostSession: true,
            { connection, nonce throws(_PGFailure) in
                try connection.run(prepared: _PostgresSemaphoreSQL.tryAcquire, [order, nonce]).first ?? []
            })
    }

    /// One try of every slot, suspending the task during the round trip.
    func tryPermitAsync(operation: String, retryOnLostSession: Bool, box: _PGSessionBox) async throws -> Int64? {
        precondition(!held, "PostgresSemaphore: internal error, acquiring while held")
        let order = slotOrder()
        return try await attemptAsync(
            operation: operation, retryOnLostSession: retryOnLostSession, box: box,
            { connection, nonce throws(_PGFailure) in
                try await connection.runAsync(prepared: _PostgresSemaphoreSQL.tryAcquire, [order, nonce]).first
                    ?? []
            })
    }

    /// Takes a permit, waiting until `deadline` at most (PostgresSemaphoreSQL.swift's protocol).
    /// - Returns: the token, or nil when the deadline passed first. - Throws: CancellationError
    ///   when the task is cancelled while it waits (nothing is held then).
    func acquirePermitAsync(operation: String, before deadline: ContinuousClock.Instant, box: _PGSessionBox)
        async throws -> Int64?
    {
        if let token = try await tryPermitAsync(operation: operation, retryOnLostSession: true, box: box) {
            return token
        }
        guard ContinuousClock.now < deadline else { return nil }
        try Task.checkCancellation()
        let connection = try await connectionAsync(for: operation, box: box)
        let probe = _PGContention.begin()
        let channel = _PostgresSemaphoreSQL.channel(name: name)
        do {
            for statement in _PostgresSemaphoreSQL.beginWaiting(channel: channel, waitKey: key) {
                _ = try await connection.runAsync(statement)
            }
        } catch {
            close()
            throw PostgresLockError(
                error, lockName: name, operation: operation, doing: "cannot start waiting for a permit")
        }
        let outcome = await Result { () async throws(any Error) -> Int64? in
            while true {
                try Task.checkCancellation()
                if let token = try await tryPermitAsync(operation: operation, retryOnLostSession: false, box: box) {
                    return token
                }
                let now = ContinuousClock.now
                if now >= deadline { return nil }
                guard let open, open.isUsable else { continue }  // the next try reports it
                if !open.takeNotifications() {
                    await _PGReactor.shared.readable(
                        open.socket, until: min(deadline, now + recheckInterval))
                    _ = open.takeNotifications()
                }
            }
        }
        // W5: stop waiting, whatever the outcome (a closed session has nothing to undo). A failure
        // here leaves the session listening, which is harmless: notifications are read and freed
        // at the next wait.
        if let open, open.isUsable {
            _ = try? await open.runAsync(_PostgresSemaphoreSQL.endWaiting(channel: channel, waitKey: key))
            _ = open.takeNotifications()
        }
        let token = try outcome.get()
        if token != nil, Task.isCancelled {
            // Granted as the task was cancelled: give the permit back.
            _ = try? await releaseAsync()
            throw CancellationError()
        }
        if token != nil { _PGContention.end(probe, self, name: name, semaphore: true) }
        return token
    }
}
