// A statement on a _PGConnection without blocking the calling thread: libpq's asynchronous
// interface on the connection (non-blocking since it opened), the reactor (PostgresReactor.swift)
// for the waits on its socket.
//
//   send      PQsendQuery / PQsendQueryPrepared: queues the statement (never blocks)
//   flush     PQflush until 0; 1 means the socket is full: wait until writable
//   read      PQconsumeInput; while PQisBusy, wait until readable and read again
//   results   PQgetResult until NULL, each only when PQisBusy says it will not block; the rows of
//             the last result, or the first error
//
// Cancellation (only of a statement that may wait in the server, `cancellable: true`): the task's
// cancellation handler sends a cancel request (PQcancel, on a thread of its own: it opens a
// connection), and the statement ends early with SQLSTATE 57014, or completes if it already had;
// the caller decides what a completed statement means once the task is cancelled.

import CLibPQ
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension _PGConnection {
    /// Runs the prepared statement `name` with text parameters, suspending the task (not the
    /// thread) while the server works. - Returns: the rows, as text.
    func runAsync(prepared name: String, _ parameters: [String]) async throws(_PGFailure) -> [[String?]] {
        let handle = try usableHandle()
        let copies = parameters.map { strdup($0) }
        let values = copies.map { UnsafePointer($0) }
        let sent = PQsendQueryPrepared(handle, name, Int32(values.count), values, nil, nil, 0)
        for copy in copies { free(copy) }
        guard sent == 1 else { throw connectionFailure() }
        return try await collect(handle, cancellable: false)
    }

    /// Runs `sql` (one or more statements, one implicit transaction) as `run(_:)` does, suspending
    /// the task. With `cancellable`, cancelling the task cancels the statement in the server.
    /// - Returns: the rows of the last statement, as text.
    func runAsync(_ sql: String, cancellable: Bool = false) async throws(_PGFailure) -> [[String?]] {
        let handle = try usableHandle()
        guard PQsendQuery(handle, sql) == 1 else { throw connectionFailure() }
        return try await collect(handle, cancellable: cancellable)
    }

    private func collect(_ handle: OpaquePointer, cancellable: Bool) async throws(_PGFailure) -> [[String?]] {
        let fd = PQsocket(handle)
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            if flushed < 0 { throw connectionFailure() }
            await _PGReactor.shared.ready(fd, writable: true)
        }
        let cancel = cancellable ? _PGCancelRequest(handle) : nil
        var rows: [[String?]] = []
        var failure: _PGFailure?
        while true {
            guard PQconsumeInput(handle) == 1 else { throw connectionFailure() }
            if PQisBusy(handle) == 1 {
                if let cancel {
                    await withTaskCancellationHandler {
                        await _PGReactor.shared.ready(fd)
                    } onCancel: {
                        cancel.send()
                    }
                } else {
                    await _PGReactor.shared.ready(fd)
                }
                continue
            }
            guard let result = PQgetResult(handle) else { break }
            let status = PQresultStatus(result)
            if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                if failure == nil { rows = self.rows(result) } else { PQclear(result) }
            } else {
                if failure == nil { failure = self.failure(from: result) }
                PQclear(result)
            }
        }
        // A cancel request still on its way could reach the server while the caller's next
        // statement runs, and cancel that one: wait until the server has taken it (PQcancel
        // returns once the postmaster has signalled the backend, which ignores a cancel that
        // arrives while it waits for a command).
        if let cancel { await cancel.delivered() }
        if let failure { throw failure }
        return rows
    }
}

/// A cancel request for the statement running on one connection: PQgetCancel's object, sent at
/// most once, from a thread of its own (PQcancel blocks while it connects to the server).
///
/// States (under `state`): `idle` (not sent), `sending` (a thread runs PQcancel; tasks that wait
/// for its end are listed), `done`. Each waiter is resumed once, when `done` is reached.
final class _PGCancelRequest: @unchecked Sendable {
    // @unchecked: `cancel` is written once, in init, and freed in deinit (after the sending
    // thread, which holds a reference, has ended); PQcancel may be called from any thread.
    private let cancel: OpaquePointer?

    private enum State {
        case idle
        case sending([(UnsafeContinuation<Void, Never>, _PGResumption)])
        case done
    }
    private let state = _PGProtected<State>(.idle)

    init(_ handle: OpaquePointer) { cancel = PQgetCancel(handle) }

    deinit { if let cancel { PQfreeCancel(cancel) } }

    /// Asks the server to cancel the statement (once; later calls do nothing).
    func send() {
        let start = state.withLock { state -> Bool in
            guard case .idle = state, cancel != nil else { return false }
            state = .sending([])
            return true
        }
        guard start else { return }
        _PGThread.start { [self] in
            var error = [CChar](repeating: 0, count: 256)
            // A failed request leaves the statement to end by itself (its lock_timeout).
            _ = PQcancel(cancel, &error, Int32(error.count))
            let waiters = state.withLock { state -> [(UnsafeContinuation<Void, Never>, _PGResumption)] in
                defer { state = .done }
                if case .sending(let waiters) = state { return waiters }
                return []
            }
            for (continuation, resumption) in waiters { resumption.resume(continuation) }
        }
    }

    /// Returns once a request that was sent has reached the server (at once when none was).
    func delivered() async {
        await _PGResumption.suspend { continuation, resumption in
            let wait = state.withLock { state -> Bool in
                guard case .sending(var waiters) = state else { return false }
                waiters.append((continuation, resumption))
                state = .sending(waiters)
                return true
            }
            if !wait { resumption.resume(continuation) }
        }
    }
}
