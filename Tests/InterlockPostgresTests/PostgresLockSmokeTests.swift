import Interlock
import Testing

@testable import InterlockPostgres

@Suite("PostgresLock, basics", .blocking)
struct PostgresLockBasicsTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("tryLock excludes a second object; unlock lets it in with a larger token")
    func exclusionAndTokens() throws {
        let a = try PostgresLock(connectionString: server.connectionString, name: "basics-1")
        let b = try PostgresLock(connectionString: server.tcpConnectionString, name: "basics-1")
        #expect(try a.tryLock())
        let first = try #require(a.fencingToken)
        #expect(try !b.tryLock())
        #expect(try !a.tryLock())
        #expect(try a.checkHeld())
        let holder = try #require(try b.holderInfo())
        #expect(!holder.isThisObject)
        try a.unlock()
        #expect(a.fencingToken == nil)
        #expect(try b.tryLock())
        let second = try #require(b.fencingToken)
        #expect(second > first)
        try b.unlock()
        #expect(try b.holderInfo() == nil)
    }
}
