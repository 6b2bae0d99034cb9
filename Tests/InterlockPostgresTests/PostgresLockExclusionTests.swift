// PostgresLock's mutual exclusion between objects in one process: over the Unix socket and TCP,
// the same name on two objects, different names, tryLock on the holder, unlock when not held,
// and the advisory lock as another application on the server sees it.

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, exclusion", .blocking)
struct PostgresLockExclusionTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("an object over the Unix socket and one over TCP exclude each other, both ways")
    func socketAndTCPObjectsExclude() throws {
        let overSocket = try PostgresLock(connectionString: server.connectionString, name: "exclusion-socket-tcp")
        let overTCP = try PostgresLock(connectionString: server.tcpConnectionString, name: "exclusion-socket-tcp")
        #expect(overSocket.key == overTCP.key)

        #expect(try overSocket.tryLock())
        #expect(try !overTCP.tryLock())
        #expect(overTCP.fencingToken == nil)
        try overSocket.unlock()

        #expect(try overTCP.tryLock())
        #expect(try !overSocket.tryLock())
        #expect(overSocket.fencingToken == nil)
        try overTCP.unlock()

        #expect(try overSocket.tryLock())
        try overSocket.unlock()
    }

    @Test("tryLock on the object that holds the lock returns false and keeps it held")
    func tryLockOnTheHolderReturnsFalse() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "exclusion-holder-again")
        #expect(try lock.tryLock())
        let token = try #require(lock.fencingToken)
        #expect(try !lock.tryLock())
        #expect(try !lock.lock(before: .now + .milliseconds(50)))
        #expect(lock.fencingToken == token)
        #expect(try lock.checkHeld())
        // Held once: one unlock releases it, the second finds it not held.
        try lock.unlock()
        #expect(try lock.holderInfo() == nil)
        let error = try #require(throws: PostgresLockError.self) { try lock.unlock() }
        #expect(error.code == .notHeld)
    }

    @Test("unlock on an object that never held the lock throws notHeld, naming the lock")
    func unlockWhenNotHeldThrowsNotHeld() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "exclusion-not-held")
        let other = try PostgresLock(connectionString: server.connectionString, name: "exclusion-not-held")
        #expect(try other.tryLock())
        // Held by another object of the same name: still not this object's to release.
        let error = try #require(throws: PostgresLockError.self) { try lock.unlock() }
        #expect(error.code == .notHeld)
        #expect(error.lockName == "exclusion-not-held")
        #expect(error.operation == "unlock")
        #expect(error.description.contains("exclusion-not-held"))
        // ... and the failed unlock did not release the other object's lock.
        #expect(try other.checkHeld())
        #expect(try !lock.tryLock())
        try other.unlock()
        #expect(try !lock.checkHeld())
    }

    @Test("several objects of the same name: exactly one holds at a time")
    func sameNameOnSeveralObjects() throws {
        let locks = try (0..<4).map { index in
            try PostgresLock(
                connectionString: index % 2 == 0 ? server.connectionString : server.tcpConnectionString,
                name: "exclusion-same-name")
        }
        for holder in locks.indices {
            #expect(try locks[holder].tryLock())
            for other in locks.indices where other != holder {
                #expect(try !locks[other].tryLock(), "object \(other) took the lock held by \(holder)")
            }
            try locks[holder].unlock()
        }
    }

    @Test("different names do not exclude each other")
    func differentNamesDoNotExclude() throws {
        let names = ["exclusion-name-a", "exclusion-name-b", "exclusion-name-c"]
        let locks = try names.map { try PostgresLock(connectionString: server.connectionString, name: $0) }
        #expect(Set(locks.map(\.key)).count == names.count)
        for lock in locks { #expect(try lock.tryLock(), "\(lock.name)") }
        for lock in locks { #expect(try lock.checkHeld(), "\(lock.name)") }
        // Each is a lock of its own: a fresh object of one of the names is excluded.
        let again = try PostgresLock(connectionString: server.tcpConnectionString, name: names[1])
        #expect(try !again.tryLock())
        for lock in locks { try lock.unlock() }
        #expect(try again.tryLock())
        try again.unlock()
    }

    /// Another application's attempt at the bigint advisory lock `key`, on a session of its own;
    /// it unlocks what it took before the session ends (a closed session's locks are released
    /// only when its backend has exited, a moment after the close).
    func anotherApplicationTakes(_ key: Int64) throws -> Bool {
        let row = try server.execute(
            """
            SELECT got, CASE WHEN got THEN pg_advisory_unlock(\(key)::bigint) END
            FROM (SELECT pg_try_advisory_lock(\(key)::bigint) AS got OFFSET 0) AS attempt
            """)[0]
        return row[0] == "t"
    }

    @Test("the lock is the bigint advisory lock key(for: name): another session sees it taken")
    func theLockIsTheAdvisoryLockOfTheKey() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "exclusion-advisory-key")
        #expect(try PGTest.holderPID(server, key: lock.key) == nil)
        #expect(try anotherApplicationTakes(lock.key))

        #expect(try lock.tryLock())
        let holder = try #require(try lock.holderInfo())
        #expect(try PGTest.holderPID(server, key: lock.key) == holder.backendProcessID)
        // Another application locking the same bigint key is excluded ...
        #expect(try !anotherApplicationTakes(lock.key))
        try lock.unlock()
        // ... until the unlock.
        #expect(try PGTest.holderPID(server, key: lock.key) == nil)
        #expect(try anotherApplicationTakes(lock.key))
        #expect(try lock.tryLock())
        try lock.unlock()
    }
}
