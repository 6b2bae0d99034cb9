// PostgresLock across server crashes and restarts, each test on a private server of its own:
// a holder finds its lock lost after a crash, and the next token carries a larger epoch (the
// top 20 bits); a clean restart keeps the epoch and the counter; a restart while nobody holds
// the lock is invisible to the next acquisition.
//
// Regression (crashWhileHolding, restartWhileNotHolding with stop-immediate): over the Unix
// socket, the first statement after a crash fails with "server closed the connection
// unexpectedly", no SQLSTATE, while PQstatus still says CONNECTION_OK; the failure was taken for
// a server error, so checkHeld() threw instead of answering false, and tryLock() threw instead
// of reconnecting.

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, server crashes and restarts", .serialized, .blocking)
struct PostgresLockRestartTests {
    /// The epoch field of a token (its top 20 bits, after the 43-bit counter).
    static func epoch(_ token: Int64) -> Int64 { token >> 43 }
    /// The counter field of a token.
    static func counter(_ token: Int64) -> Int64 { token & ((1 << 43) - 1) }

    @Test("a crash while holding: checkHeld false, unlock throws lockLost, the next token's epoch is larger")
    func crashWhileHolding() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let holder = try PostgresLock(connectionString: server.connectionString, name: "restart-crash")
        let unaware = try PostgresLock(connectionString: server.tcpConnectionString, name: "restart-crash")
        // A few acquisitions, so that the counter is well past its start.
        var before: Int64 = 0
        for _ in 0..<5 {
            #expect(try unaware.tryLock())
            before = try #require(unaware.fencingToken)
            try unaware.unlock()
        }
        #expect(try holder.tryLock())
        let lostToken = try #require(holder.fencingToken)
        #expect(lostToken > before)
        #expect(try unaware.tryLock() == false)

        try server.control("stop-immediate")
        try server.control("start")

        #expect(try !holder.checkHeld())
        #expect(holder.fencingToken == nil)
        let error = try #require(throws: PostgresLockError.self) { try holder.unlock() }
        #expect(error.code == .lockLost)

        // A new object (and the old TCP one, which reconnects) get the lock with larger tokens.
        let fresh = try PostgresLock(connectionString: server.connectionString, name: "restart-crash")
        #expect(try fresh.tryLock())
        let after = try #require(fresh.fencingToken)
        #expect(after > lostToken)
        #expect(Self.epoch(after) > Self.epoch(lostToken), "epoch \(Self.epoch(after)) after \(Self.epoch(lostToken))")
        // Crash recovery reset the unlogged counter: the epoch alone keeps the order.
        #expect(Self.counter(after) < Self.counter(lostToken))
        try fresh.unlock()
        #expect(try unaware.tryLock())
        #expect(try #require(unaware.fencingToken) > after)
        try unaware.unlock()
        #expect(try holder.tryLock())
        try holder.unlock()
    }

    @Test("a clean restart keeps the epoch and the counter: tokens keep growing")
    func cleanRestartKeepsTokensIncreasing() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let lock = try PostgresLock(connectionString: server.connectionString, name: "restart-clean")
        #expect(try lock.tryLock())
        let before = try #require(lock.fencingToken)
        try lock.unlock()

        try server.control("stop")
        try server.control("start")

        // Not holding: the next acquisition reconnects silently.
        #expect(try lock.tryLock())
        let after = try #require(lock.fencingToken)
        #expect(after > before)
        #expect(Self.epoch(after) == Self.epoch(before))
        try lock.unlock()

        // Holding across a clean restart: the lock is lost, and the next token still grows.
        #expect(try lock.tryLock())
        let held = try #require(lock.fencingToken)
        try server.control("stop")
        try server.control("start")
        #expect(try !lock.checkHeld())
        let error = try #require(throws: PostgresLockError.self) { try lock.unlock() }
        #expect(error.code == .lockLost)
        let other = try PostgresLock(connectionString: server.tcpConnectionString, name: "restart-clean")
        #expect(try other.tryLock())
        #expect(try #require(other.fencingToken) > held)
        try other.unlock()
    }

    @Test(
        "a restart between calls while not holding: the next tryLock or holderInfo reconnects silently",
        arguments: ["stop", "stop-immediate"])
    func restartWhileNotHolding(stopMode: String) throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let overSocket = try PostgresLock(connectionString: server.connectionString, name: "restart-idle")
        let overTCP = try PostgresLock(connectionString: server.tcpConnectionString, name: "restart-idle")
        #expect(try overSocket.tryLock())
        let before = try #require(overSocket.fencingToken)
        try overSocket.unlock()
        #expect(try overTCP.holderInfo() == nil)  // its session is open too

        try server.control(stopMode)
        try server.control("start")

        #expect(try overSocket.tryLock())
        let after = try #require(overSocket.fencingToken)
        #expect(after > before)
        // holderInfo reconnects silently too (its session died with the restart).
        #expect(try overTCP.holderInfo()?.isThisObject == false)
        #expect(try !overTCP.tryLock())
        try overSocket.unlock()
        #expect(try overTCP.lock(before: .now + .seconds(5)))
        #expect(try #require(overTCP.fencingToken) > after)
        try overTCP.unlock()
    }
}
