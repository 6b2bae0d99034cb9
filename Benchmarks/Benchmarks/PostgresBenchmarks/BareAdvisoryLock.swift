// The floor of PostgresBenchmarks: the two round trips that any session-level advisory lock
// costs, through libpq directly — pg_try_advisory_lock($1::bigint), then
// pg_advisory_unlock($1::bigint), each a PQexecPrepared of a statement prepared once, with the
// key's text, the statement names and the parameter array made once. No fencing token, no
// error values, no Swift strings or arrays per call: what is left is libpq and the server.
//
// This file imports libpq's module (LibPQPeers) alone; the Interlock contenders live in
// PostgresBenchmarks.swift.

import LibPQPeers

#if canImport(Glibc)
import Glibc
#endif

/// One libpq session taking and releasing one advisory lock (see the file comment).
final class BareAdvisoryLock: @unchecked Sendable {
    // Used by one thread at a time: the benchmark's setup, its measured closure, its teardown.
    private let connection: OpaquePointer
    private let keyText: UnsafeMutablePointer<CChar>
    private let tryName: UnsafeMutablePointer<CChar>
    private let unlockName: UnsafeMutablePointer<CChar>

    /// Connects with `connectionString` and prepares the two statements; traps with libpq's
    /// message when it cannot (a benchmark has no one to report an error to).
    init(connectionString: String, key: Int64) {
        guard let connection = PQconnectdb(connectionString), PQstatus(connection) == CONNECTION_OK else {
            fatalError("PostgresBenchmarks: libpq cannot connect with \(connectionString)")
        }
        self.connection = connection
        keyText = strdup(String(key))
        tryName = strdup("ilk_peer_try_lock")
        unlockName = strdup("ilk_peer_unlock")
        for (name, sql) in [
            (tryName, "SELECT pg_try_advisory_lock($1::bigint)"), (unlockName, "SELECT pg_advisory_unlock($1::bigint)"),
        ] {
            let result = PQprepare(connection, name, sql, 1, nil)
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else {
                fatalError("PostgresBenchmarks: PQprepare \(sql): \(String(cString: PQerrorMessage(connection)))")
            }
        }
    }

    deinit {
        PQfinish(connection)
        free(keyText)
        free(tryName)
        free(unlockName)
    }

    /// Takes the lock and releases it: two round trips. Traps when the lock was held (the
    /// benchmark is uncontended) or the server refused.
    @inline(__always)
    func cycle() {
        precondition(run(tryName), "PostgresBenchmarks: pg_try_advisory_lock found the lock held")
        precondition(run(unlockName), "PostgresBenchmarks: pg_advisory_unlock found the lock not held")
    }

    /// Runs a prepared statement with the key; whether it returned true.
    @inline(__always)
    private func run(_ statement: UnsafeMutablePointer<CChar>) -> Bool {
        var parameter: UnsafePointer<CChar>? = UnsafePointer(keyText)
        let result = PQexecPrepared(connection, statement, 1, &parameter, nil, nil, 0)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else {
            let message = String(cString: PQerrorMessage(connection))
            fatalError("PostgresBenchmarks: \(String(cString: statement)): \(message)")
        }
        return PQgetvalue(result, 0, 0).pointee == CChar(UInt8(ascii: "t"))
    }
}
