// The floor of PostgresBenchmarks, straight through libpq: prepared statements made once, the
// keys' text made once, no Swift strings or arrays per call, no token, no error values.
//
// With one key, the bare advisory lock that PostgresLock is compared with: `take(0)` is
// pg_try_advisory_lock, `release(0)` pg_advisory_unlock, two round trips.
//
// With several, the peer of PostgresSemaphore's benchmark: a counting semaphore written by hand
// on advisory locks, as users build one today. `permits` bigint keys; an acquisition tries them one round
// trip each (pg_try_advisory_lock, prepared once) from a random start until one is granted, a
// release is pg_advisory_unlock of the granted key. No token, no wake-up of waiters (a waiter of
// this scheme polls), no pooler or loss checks: the floor of "N slots".
//
// Also the blockers of the contended rows: a session that takes given slots and keeps them.

import LibPQPeers

#if canImport(Glibc)
import Glibc
#endif

/// One libpq session over `permits` advisory-lock slots (see the file comment).
final class AdvisorySlots: @unchecked Sendable {
    // Used by one thread at a time: the benchmark's setup, its measured closure, its teardown.
    private let connection: OpaquePointer
    private let keys: [UnsafeMutablePointer<CChar>]
    private let tryName = strdup("ilk_peer_slot_try")!
    private let unlockName = strdup("ilk_peer_slot_unlock")!
    private var generator = SystemRandomNumberGenerator()

    /// Connects and prepares the two statements for the slots `keys`; traps when it cannot.
    init(connectionString: String, keys: [Int64]) {
        guard let connection = PQconnectdb(connectionString), PQstatus(connection) == CONNECTION_OK else {
            fatalError("PostgresBenchmarks: libpq cannot connect with \(connectionString)")
        }
        self.connection = connection
        self.keys = keys.map { strdup(String($0))! }
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
        for key in keys { free(key) }
        free(tryName)
        free(unlockName)
    }

    /// Takes a free slot: one round trip per slot tried. - Returns: its index, or nil when all
    /// are held.
    func acquire() -> Int? {
        let start = Int.random(in: 0..<keys.count, using: &generator)
        for step in 0..<keys.count {
            let index = (start + step) % keys.count
            if run(tryName, keys[index]) { return index }
        }
        return nil
    }

    /// Takes the slot `index` (the bare lock, the blockers). Traps when it is held.
    @inline(__always)
    func take(_ index: Int) {
        precondition(run(tryName, keys[index]), "PostgresBenchmarks: slot \(index) was held")
    }

    /// Releases the slot `index`. Traps when this session did not hold it.
    @inline(__always)
    func release(_ index: Int) {
        precondition(run(unlockName, keys[index]), "PostgresBenchmarks: pg_advisory_unlock found the slot free")
    }

    @inline(__always)
    private func run(_ statement: UnsafeMutablePointer<CChar>, _ key: UnsafeMutablePointer<CChar>) -> Bool {
        var parameter: UnsafePointer<CChar>? = UnsafePointer(key)
        let result = PQexecPrepared(connection, statement, 1, &parameter, nil, nil, 0)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else {
            let message = String(cString: PQerrorMessage(connection))
            fatalError("PostgresBenchmarks: \(String(cString: statement)): \(message)")
        }
        return PQgetvalue(result, 0, 0).pointee == CChar(UInt8(ascii: "t"))
    }
}
