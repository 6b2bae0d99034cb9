// DistributedLocking: code written against the protocol runs unchanged on the file lock
// (DistributedLock) and on PostgresLock.

import Foundation
import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock as DistributedLocking", .blocking)
struct PostgresLockDistributedLockingTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    /// Exercises two objects of one lock through the protocol alone. - Returns: what happened,
    /// step by step, for the caller to compare.
    static func exercise(_ first: some DistributedLocking, _ second: some DistributedLocking) throws -> [String] {
        var steps: [String] = []
        steps.append("first tryLock \(try first.tryLock())")
        steps.append("first tryLock again \(try first.tryLock())")
        steps.append("second tryLock \(try second.tryLock())")
        let deadline = ContinuousClock.now + .milliseconds(100)
        steps.append("second lock(before:) \(try second.lock(before: deadline, pollInterval: .milliseconds(5)))")
        steps.append("deadline passed \(ContinuousClock.now >= deadline)")
        try first.unlock()
        steps.append(
            "second lock(before:) after unlock \(try second.lock(before: .now + .seconds(5), pollInterval: .milliseconds(5)))"
        )
        steps.append("first tryLock \(try first.tryLock())")
        try second.unlock()
        do {
            try second.unlock()
            steps.append("second unlock again succeeded")
        } catch {
            steps.append("second unlock again threw")
        }
        return steps
    }

    static let expected = [
        "first tryLock true", "first tryLock again false", "second tryLock false", "second lock(before:) false",
        "deadline passed true", "second lock(before:) after unlock true", "first tryLock false",
        "second unlock again threw",
    ]

    @Test("one generic function over DistributedLock (a file in a temporary directory)")
    func fileLock() throws {
        let directory = try PGTest.temporaryDirectory()
        defer { PGTest.removeDirectory(directory) }
        let path = directory + "/generic.lock"
        #expect(try Self.exercise(DistributedLock(path: path), DistributedLock(path: path)) == Self.expected)
    }

    @Test("the same generic function over PostgresLock")
    func postgresLock() throws {
        let first = try PostgresLock(connectionString: server.connectionString, name: "generic")
        let second = try PostgresLock(connectionString: server.tcpConnectionString, name: "generic")
        #expect(try Self.exercise(first, second) == Self.expected)
        // Also as existentials, as a caller that picks the lock at run time holds them.
        let locks: [any DistributedLocking] = [first, second]
        #expect(try locks[0].tryLock())
        #expect(try !locks[1].tryLock())
        try locks[0].unlock()
    }
}
