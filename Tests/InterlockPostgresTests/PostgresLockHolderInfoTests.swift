// PostgresLock.holderInfo(): nil when free; when held, the holder's backend pid, whether it is
// the asking object, its client address, its application_name (the default "interlock", or the
// connection string's) and a lower bound of when its session started.

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, holderInfo", .blocking)
struct PostgresLockHolderInfoTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("holderInfo is nil while nobody holds the lock, before and after a holder")
    func nilWhenFree() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "holder-free")
        let other = try PostgresLock(connectionString: server.tcpConnectionString, name: "holder-free")
        #expect(try lock.holderInfo() == nil)
        #expect(try other.holderInfo() == nil)
        #expect(try other.tryLock())
        #expect(try lock.holderInfo() != nil)
        try other.unlock()
        #expect(try lock.holderInfo() == nil)
        #expect(try other.holderInfo() == nil)
    }

    @Test(
        "holderInfo names the holder's backend, tells the holder from the others, application_name interlock by default"
    )
    func holderAsSeenByItselfAndByAnother() throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "holder-default")
        let other = try PostgresLock(connectionString: server.tcpConnectionString, name: "holder-default")
        let before = PGTest.wallClock
        #expect(try holder.tryLock())
        let backend = try #require(try PGTest.holderPID(server, key: holder.key), "no granted row in pg_locks")

        let seenByHolder = try #require(try holder.holderInfo())
        #expect(seenByHolder.isThisObject)
        #expect(seenByHolder.backendProcessID == backend)
        #expect(seenByHolder.applicationName == "interlock")
        #expect(seenByHolder.clientAddress == nil)  // the Unix socket

        let seenByOther = try #require(try other.holderInfo())
        #expect(!seenByOther.isThisObject)
        #expect(seenByOther.backendProcessID == backend)
        #expect(seenByOther.applicationName == "interlock")
        #expect(seenByOther.clientAddress == nil)
        // The holder's session started before the lock was taken (and not long before: this
        // test opened it).
        let started = try #require(seenByOther.sessionStart)
        #expect(started <= PGTest.wallClock + .seconds(1))
        #expect(started >= before - .seconds(60))
        #expect(seenByOther.sessionStart == seenByHolder.sessionStart)
        try holder.unlock()
    }

    @Test("a holder over TCP with its own application_name: holderInfo reports both")
    func holderWithItsOwnApplicationName() throws {
        let holder = try PostgresLock(
            connectionString: server.tcpConnectionString + " application_name=holder-info-app",
            name: "holder-app-name")
        let other = try PostgresLock(connectionString: server.connectionString, name: "holder-app-name")
        #expect(try holder.tryLock())
        let byName = try server.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'holder-info-app'")
        #expect(byName.count == 1)
        let backend = try #require(byName.first?[0].flatMap { Int32($0) })

        let info = try #require(try other.holderInfo())
        #expect(info.applicationName == "holder-info-app")
        #expect(info.backendProcessID == backend)
        #expect(info.clientAddress == "127.0.0.1")
        #expect(!info.isThisObject)
        let own = try #require(try holder.holderInfo())
        #expect(own.isThisObject)
        #expect(own.applicationName == "holder-info-app")
        try holder.unlock()
    }

    @Test("application_name in a postgresql:// URI overrides the default too")
    func applicationNameInAURI() throws {
        let uri = "postgresql://postgres@127.0.0.1:\(server.port)/postgres?application_name=holder-uri-app"
        let holder = try PostgresLock(connectionString: uri, name: "holder-uri")
        let other = try PostgresLock(connectionString: server.connectionString, name: "holder-uri")
        #expect(try holder.tryLock())
        let info = try #require(try other.holderInfo())
        #expect(info.applicationName == "holder-uri-app")
        #expect(info.clientAddress == "127.0.0.1")
        try holder.unlock()
    }
}
