// Lock loss through pg_terminate_backend of the holder's backend: checkHeld() answers false,
// fencingToken goes, unlock() throws lockLost, another object takes the lock with a larger
// token, and the first object reconnects for its next acquisition.

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, a terminated backend", .blocking)
struct PostgresLockTerminatedBackendTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    /// Terminates `lock`'s backend (found with holderInfo) and waits until it has exited (the
    /// server then released its locks).
    func terminateHolder(_ lock: PostgresLock) throws -> Int32 {
        let holder = try #require(try lock.holderInfo())
        #expect(holder.isThisObject)
        let terminated = try server.execute("SELECT pg_terminate_backend(\(holder.backendProcessID), 10000)")
        #expect(terminated[0][0] == "t", "pg_terminate_backend(\(holder.backendProcessID)) failed")
        return holder.backendProcessID
    }

    @Test("checkHeld() false, fencingToken nil, unlock throws lockLost; the next holder has a larger token")
    func terminatedHolderFindsOut() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "terminated-check")
        let other = try PostgresLock(connectionString: server.tcpConnectionString, name: "terminated-check")
        #expect(try lock.tryLock())
        let lostToken = try #require(lock.fencingToken)
        let pid = try terminateHolder(lock)
        #expect(try PGTest.holderPID(server, key: lock.key) == nil)

        #expect(try !lock.checkHeld())
        #expect(lock.fencingToken == nil)
        #expect(try !lock.checkHeld())  // asked again: still lost, no error

        #expect(try other.tryLock())
        let nextToken = try #require(other.fencingToken)
        #expect(nextToken > lostToken)

        let error = try #require(throws: PostgresLockError.self) { try lock.unlock() }
        #expect(error.code == .lockLost)
        #expect(error.operation == "unlock")
        #expect(error.lockName == "terminated-check")
        // unlock acknowledged the loss: the object no longer holds, and does not disturb the
        // new holder.
        #expect(try other.checkHeld())
        let unlockAgain = try #require(throws: PostgresLockError.self) { try lock.unlock() }
        #expect(unlockAgain.code == .notHeld)

        // The first object reconnects (a new backend) and takes the lock once it is free.
        #expect(try !lock.tryLock())
        try other.unlock()
        #expect(try lock.tryLock())
        let again = try #require(lock.fencingToken)
        #expect(again > nextToken)
        let holder = try #require(try lock.holderInfo())
        #expect(holder.isThisObject)
        #expect(holder.backendProcessID != pid)
        try lock.unlock()
    }

    @Test("unlock without checkHeld after the backend was terminated throws lockLost")
    func unlockFindsTheLoss() throws {
        let lock = try PostgresLock(connectionString: server.tcpConnectionString, name: "terminated-unlock")
        #expect(try lock.tryLock())
        let lostToken = try #require(lock.fencingToken)
        _ = try terminateHolder(lock)
        // The token cannot know yet (it is read without a round trip); unlock finds out.
        #expect(lock.fencingToken == lostToken)
        let error = try #require(throws: PostgresLockError.self) { try lock.unlock() }
        #expect(error.code == .lockLost)
        #expect(lock.fencingToken == nil)
        #expect(try lock.tryLock())
        #expect(try #require(lock.fencingToken) > lostToken)
        try lock.unlock()
    }

    @Test("a terminated session that did not hold the lock is reopened silently")
    func terminatedIdleSessionReconnects() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "terminated-idle")
        #expect(try lock.tryLock())
        let holder = try #require(try lock.holderInfo())
        try lock.unlock()
        #expect(try server.execute("SELECT pg_terminate_backend(\(holder.backendProcessID), 10000)")[0][0] == "t")
        #expect(try lock.tryLock())
        #expect(try lock.checkHeld())
        try lock.unlock()
    }
}
