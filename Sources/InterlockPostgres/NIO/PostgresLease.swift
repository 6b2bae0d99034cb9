// A connection leased from a postgres-nio PostgresClient for as long as a lock is held, and the
// statements run on it with results as text (the rows PostgresLock's SQL already reads).
//
// Leasing: `PostgresClient.withConnection` lends a connection for the length of a closure; a
// hold outlives any one call, so the closure runs in a task of its own, hands the connection
// out, and waits until the hold ends (`end`), when the pool gets it back. A connection whose
// state is not known (a failure while it may hold the lock) is closed first (`end(closing:)`):
// the server then releases whatever it held, and the pool opens a new one in its place, so a
// lease never returns a connection that holds a lock to the pool.
//
//   lease     taken    handed out        ended
//   task      waits    waits in closure  closure returns: the pool has the connection again
//
// Results: postgres-nio decodes a column by its type; `text(of:)` turns the types the lock's
// statements return (bool, integers, float8, text) into libpq's text forms ("t", "42"), so
// the same row readers serve both connections. Errors become `_PGFailure`s: the server's
// SQLSTATE and message, or a lost session for anything below the server (a closed channel).

#if INTERLOCK_POSTGRES_NIO
import PostgresNIO

/// A connection leased from a pool for one hold (see the file comment).
final class _PGLease: Sendable {
    let connection: PostgresConnection
    private let giveBack: _PGProtected<CheckedContinuation<Void, Never>?>

    private init(_ connection: PostgresConnection, _ giveBack: CheckedContinuation<Void, Never>) {
        self.connection = connection
        self.giveBack = _PGProtected(giveBack)
    }

    /// Leases a connection from `client`, waiting for one as the pool decides.
    /// - Throws: what the pool throws when it cannot lend one (closed, cannot connect).
    static func take(from client: PostgresClient) async throws -> _PGLease {
        let handedOut = _PGProtected(false)
        return try await withCheckedThrowingContinuation { (result: CheckedContinuation<_PGLease, any Error>) in
            Task {
                do {
                    try await client.withConnection { connection in
                        await withCheckedContinuation { (back: CheckedContinuation<Void, Never>) in
                            handedOut.withLock { $0 = true }
                            result.resume(returning: _PGLease(connection, back))
                        }
                    }
                } catch {
                    // Only a lease that was never handed out fails here: the closure cannot throw.
                    if !handedOut.withLock({ $0 }) { result.resume(throwing: error) }
                }
            }
        }
    }

    /// Gives the connection back to the pool (once; later calls do nothing). `closing` closes it
    /// first, for a connection whose server session may hold something.
    func end(closing: Bool = false) async {
        if closing { try? await connection.close() }
        giveBack.withLock { back -> CheckedContinuation<Void, Never>? in
            defer { back = nil }
            return back
        }?.resume()
    }

    /// `end(closing: true)` without waiting, for a deinit.
    func abandon() {
        connection.close().whenComplete { [self] _ in
            giveBack.withLock { back -> CheckedContinuation<Void, Never>? in
                defer { back = nil }
                return back
            }?.resume()
        }
    }

    /// Runs `sql`, one statement, with text parameters. - Returns: the rows, as text.
    func run(_ sql: String, _ parameters: [String] = []) async throws(_PGFailure) -> [[String?]] {
        var bindings = PostgresBindings(capacity: parameters.count)
        for parameter in parameters { bindings.append(parameter, context: .default) }
        do {
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: sql, binds: bindings), logger: connection.logger)
            var result: [[String?]] = []
            for try await row in rows { result.append(try row.map(Self.text(of:))) }
            return result
        } catch let failure as _PGFailure {
            throw failure
        } catch {
            throw Self.failure(error)
        }
    }

    /// Runs each statement of `script` in turn. - Returns: the rows of the last one.
    func runScript(_ script: String) async throws(_PGFailure) -> [[String?]] {
        var rows: [[String?]] = []
        for statement in _PostgresLockSQL.statements(of: script) { rows = try await run(statement) }
        return rows
    }

    /// A column's value in libpq's text form (see the file comment); nil for NULL.
    static func text(of cell: PostgresCell) throws(_PGFailure) -> String? {
        guard cell.bytes != nil else { return nil }
        do {
            switch cell.dataType {
            case .bool: return try cell.decode(Bool.self) ? "t" : "f"
            case .int2, .int4, .int8: return String(try cell.decode(Int64.self))
            case .float4, .float8: return String(try cell.decode(Double.self))
            default: return try cell.decode(String.self)
            }
        } catch {
            throw _PGFailure(
                sqlState: nil, message: "cannot read column \(cell.columnName) (\(cell.dataType)): \(error)",
                sessionLost: false)
        }
    }

    /// What a postgres-nio error says: the server's SQLSTATE and message, or a lost session.
    static func failure(_ error: any Error) -> _PGFailure {
        guard let error = error as? PSQLError else {
            return _PGFailure(sqlState: nil, message: "\(error)", sessionLost: true)
        }
        guard error.code == .server, let info = error.serverInfo else {
            return _PGFailure(sqlState: nil, message: "postgres-nio: \(error.code)", sessionLost: true)
        }
        let state = info[.sqlState]
        // As libpq's failures are read: class 08 and 57P01-57P03 end the session.
        let lost = state?.hasPrefix("08") == true || ["57P01", "57P02", "57P03"].contains(state ?? "")
        return _PGFailure(sqlState: state, message: info[.message] ?? "\(error.code)", sessionLost: lost)
    }
}
#endif
