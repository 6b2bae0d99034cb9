// Fencing enforced by the database (PostgresLock.fencingSQL): a protected table whose writes call
// interlock.fence(name, token) in the same statement refuses a paused ex-holder's late write once
// the lock has passed on; every kind of acquisition records its token (tryLock, the waiting
// lock(before:), the async forms, the first acquisition after a crash, objects created before
// the script ran); after a crash no old token passes.

import Interlock
import Testing

@testable import InterlockPostgres

@Suite("PostgresLock, fencing at the resource", .serialized, .timeLimit(.minutes(2)))
struct PostgresLockFencingAtResourceTests {
    /// A write to the protected row with `token`. - Returns: the rows it changed (0: refused).
    static func write(_ server: PostgresServer, name: String, body: String, token: Int64) throws -> Int {
        let rows = try server.execute(
            """
            WITH changed AS (
                UPDATE reports SET body = '\(body)' WHERE id = 1 AND interlock.fence(\(quoted(name)), \(token))
                RETURNING 1)
            SELECT count(*) FROM changed
            """)
        return Int(rows.first?[0] ?? "") ?? -1
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    static func fence(_ server: PostgresServer, name: String, token: Int64) throws -> Bool {
        try server.execute("SELECT interlock.fence(\(quoted(name)), \(token))").first?[0] == "t"
    }

    @Test("a late write of a paused ex-holder is refused by the database once the lock passed on")
    func lateWriteIsRefused() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let name = "report's lock"  // a quote: the waiting statement quotes the name itself
        let early = try PostgresLock(connectionString: server.connectionString, name: name)
        #expect(try await early.tryLock(), "without fencing installed, acquisitions work as before")
        try await early.unlock()

        try server.execute(PostgresLock.fencingSQL)
        try server.execute(PostgresLock.fencingSQL)  // again: idempotent
        try server.execute("CREATE TABLE reports (id int PRIMARY KEY, body text); INSERT INTO reports VALUES (1, '')")

        // An object whose session prepared its statements before the script: it records too.
        #expect(try await early.tryLock())
        let earlyToken = try #require(early.fencingToken)
        #expect(try Self.fence(server, name: name, token: earlyToken))
        try await early.unlock()

        let holder = try PostgresLock(connectionString: server.tcpConnectionString, name: name)
        #expect(try await holder.tryLock())
        let first = try #require(holder.fencingToken)
        #expect(try !Self.fence(server, name: name, token: earlyToken))
        #expect(try Self.write(server, name: name, body: "first", token: first) == 1)

        // The holder pauses; its session dies (the server releases the lock).
        let pid = try #require(try PGTest.holderPID(server, key: holder.key))
        try server.execute("SELECT pg_terminate_backend(\(pid))")
        #expect(try PGTest.eventually { try PGTest.holderPID(server, key: holder.key) == nil })
        // Nobody took it since: the token is still the newest, its write still passes.
        #expect(try Self.write(server, name: name, body: "first, late", token: first) == 1)

        // The next holder, through the waiting statement (and as a task).
        let next = try PostgresLock(connectionString: server.connectionString, name: name)
        #expect(try await next.lock(before: .now + .seconds(10)))
        let second = try #require(next.fencingToken)
        #expect(second > first)
        #expect(try Self.write(server, name: name, body: "first, too late", token: first) == 0)
        #expect(try Self.write(server, name: name, body: "second", token: second) == 1)
        #expect(try server.execute("SELECT body FROM reports").first?[0] == "second")
        try await next.unlock()
        #expect(try Self.fence(server, name: name, token: second), "the newest token, released: still the newest")

        // Waiting in the server: granted at the release, noted by the waiting statement (the
        // terminated holder's object, once it acknowledged the loss, reconnects and waits).
        let lost = try await #require(throws: PostgresLockError.self) { try await holder.unlock() }
        #expect(lost.code == .lockLost)
        #expect(try await next.tryLock())
        let waiter = PGThread { try holder.lock(before: .now + .seconds(30)) }
        #expect(try PGTest.eventually { try PGTest.someoneWaits(server, key: next.key) })
        try await next.unlock()
        #expect(try waiter.join().get())
        let third = try #require(holder.fencingToken)
        #expect(try Self.fence(server, name: name, token: third))
        #expect(try !Self.fence(server, name: name, token: second))
        try await holder.unlock()
        // Names are apart: another name's tokens do not count for this one.
        #expect(try !Self.fence(server, name: "another name", token: third))
    }

    @Test("after a crash no earlier token passes; the first acquisition after it records its own", .blocking)
    func crashForgetsEveryToken() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        try server.execute(PostgresLock.fencingSQL)
        let name = "fencing-crash"
        let lock = try PostgresLock(connectionString: server.connectionString, name: name)
        #expect(try lock.tryLock())
        let before = try #require(lock.fencingToken)
        try lock.unlock()
        #expect(try Self.fence(server, name: name, token: before))

        try server.control("stop-immediate")
        try server.control("start")
        #expect(try !Self.fence(server, name: name, token: before))

        // The first acquisition since the crash starts the new epoch, then notes its token.
        #expect(try lock.tryLock())
        let after = try #require(lock.fencingToken)
        #expect(after > before)
        #expect(try Self.fence(server, name: name, token: after))
        #expect(try !Self.fence(server, name: name, token: before))
        try lock.unlock()
    }
}
