// PostgresLock's async forms: they suspend the task, never block its thread (a waiter and the
// task that releases the lock share a one-thread executor); cancellation cancels the wait in the
// server and never leaves the lock held, also when it races the grant; withLock releases on
// every path; waitUntilLost() returns when the session ends, on unlock, at once when not held,
// and on cancellation.

import Interlock
import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("PostgresLock, async forms", .timeLimit(.minutes(2)))
struct PostgresLockAsyncTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("async tryLock and unlock exclude a blocking object of the same name; tokens grow")
    func asyncTryLockExcludes() async throws {
        let asyncLock = try PostgresLock(connectionString: server.connectionString, name: "async-exclusion")
        let blocking = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-exclusion")
        var last: Int64 = 0
        for _ in 0..<5 {
            #expect(try await asyncLock.tryLock())
            let token = try #require(asyncLock.fencingToken)
            #expect(token > last)
            #expect(try await !asyncLock.tryLock(), "held by this object: false")
            #expect(try await asyncLock.checkHeld())
            #expect(try PGThread { try blocking.tryLock() }.join().get() == false)
            try await asyncLock.unlock()
            #expect(asyncLock.fencingToken == nil)
            #expect(try PGThread { try blocking.tryLock() }.join().get())
            last = try #require(blocking.fencingToken)
            try PGThread { try blocking.unlock() }.join().get()
        }
        let error = try await #require(throws: PostgresLockError.self) { try await asyncLock.unlock() }
        #expect(error.code == .notHeld)
    }

    @Test(
        "async lock(before:) waits in the server and is granted when the holder lets go; false no earlier than the deadline"
    )
    func asyncLockWaitsInTheServer() async throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "async-wait")
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-wait")
        #expect(try await holder.tryLock())
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(300)
        #expect(try await !waiter.lock(before: deadline))
        #expect(clock.now >= deadline)

        // The wait on a thread of its own: on the shared pool, the waiting child task can go
        // unscheduled for longer than any patience while other tests block both threads of a
        // 2-core machine (seen in CI: not queued after 10 s).
        let server = self.server
        try await onDedicatedThread {
            async let granted = waiter.lock(before: .now + .seconds(30))
            #expect(try await eventually { try PGTest.someoneWaits(server, key: waiter.key) })
            let first = try #require(holder.fencingToken)
            try await holder.unlock()
            #expect(try await granted)
            #expect(try #require(waiter.fencingToken) > first)
            try await waiter.unlock()
        }
    }

    @Test("a waiter on a one-thread executor leaves the thread to the task that releases the lock")
    func waiterDoesNotBlockItsThread() async throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "async-one-thread")
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-one-thread")
        let executor = SingleThreadExecutor()
        defer { executor.shutdown() }
        let server = self.server
        try await withTaskExecutorPreference(executor) {
            #expect(try await holder.tryLock())
            // If the waiter blocked the executor's one thread, the unlock below could never run,
            // and the waiter would time out after 20 s.
            async let granted = waiter.lock(before: .now + .seconds(20))
            let queued = try await eventually { try PGTest.someoneWaits(server, key: waiter.key) }
            #expect(queued)
            try await holder.unlock()
            #expect(try await granted)
            try await waiter.unlock()
        }
    }

    @Test(
        "cancelling a waiting lock(before:) cancels the wait in the server: CancellationError, nothing held, nothing queued"
    )
    func cancellationCancelsTheServerSideWait() async throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "async-cancel")
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-cancel")
        #expect(try await holder.tryLock())
        // The waiter runs on a thread of its own, so that what is measured is the cancellation,
        // not the wait for a thread of the shared pool, which other tests can keep busy for
        // seconds (seen in CI: 15 s on the pool).
        let waiterThread = DedicatedThreadExecutor()
        defer { waiterThread.shutdown() }
        let task = Task(executorPreference: waiterThread) { try await waiter.lock(before: .now + .seconds(60)) }
        #expect(try await eventually { try PGTest.someoneWaits(server, key: waiter.key) })
        // The cancellation and its measurement on a thread of their own (DedicatedThreadExecutor).
        let (outcome, took) = try await onDedicatedThread {
            let clock = ContinuousClock()
            let cancelled = clock.now
            task.cancel()
            let outcome = await task.result
            return (outcome, clock.now - cancelled)
        }
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(took < .seconds(10), "the cancellation took \(took)")
        #expect(try !PGTest.someoneWaits(server, key: waiter.key), "the waiter is still queued in the server")
        #expect(waiter.fencingToken == nil)
        try await holder.unlock()
        #expect(try PGTest.advisoryLockRows(server, key: waiter.key).isEmpty)
        // The object works on afterwards.
        #expect(try await waiter.tryLock())
        try await waiter.unlock()
    }

    @Test("cancellation racing the grant, 150 rounds: the waiter either returns holding or throws holding nothing")
    func cancellationRacingTheGrant() async throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "async-cancel-race")
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-cancel-race")
        var cancelledRounds = 0
        var grantedRounds = 0
        for round in 0..<150 {
            #expect(try await holder.tryLock())
            let task = Task { try await waiter.lock(before: .now + .seconds(30)) }
            #expect(try await eventually { try PGTest.someoneWaits(server, key: waiter.key) })
            // The unlock and the cancellation leave together, staggered a little differently
            // every round, so that the cancel request lands before, during and after the grant.
            let stagger = Duration.microseconds(round % 15 * 40)
            async let released: Void = holder.unlock()
            try await Task.sleep(for: stagger)
            task.cancel()
            try await released
            switch await task.result {
            case .success(let taken):
                #expect(taken, "round \(round)")
                #expect(try await waiter.checkHeld())
                try await waiter.unlock()
                grantedRounds += 1
            case .failure(let error):
                #expect(error is CancellationError, "round \(round): \(error)")
                #expect(waiter.fencingToken == nil)
                cancelledRounds += 1
            }
            let rows = try PGTest.advisoryLockRows(server, key: waiter.key)
            #expect(rows.isEmpty, "round \(round): left behind \(rows)")
            if !rows.isEmpty { break }
        }
        // Both outcomes occurred, or the race was not exercised.
        #expect(cancelledRounds > 0, "granted \(grantedRounds), cancelled \(cancelledRounds)")
        #expect(grantedRounds + cancelledRounds == 150)
    }

    @Test("withLock runs the body with the token and releases, also when the body throws; nil at the deadline")
    func withLockReleasesOnEveryPath() async throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "async-with-lock")
        let other = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-with-lock")
        let result = try await lock.withLock(before: .now + .seconds(5)) { (token: Int64) async throws -> Int64 in
            #expect(lock.fencingToken == token)
            #expect(try await !other.tryLock())
            return token
        }
        #expect(result != nil)
        #expect(lock.fencingToken == nil)
        #expect(try PGTest.advisoryLockRows(server, key: lock.key).isEmpty)

        struct BodyFailed: Error {}
        await #expect(throws: BodyFailed.self) {
            _ = try await lock.withLock(before: .now + .seconds(5)) { _ in throw BodyFailed() }
        }
        #expect(try PGTest.advisoryLockRows(server, key: lock.key).isEmpty)

        #expect(try await other.tryLock())
        var ran = false
        let none: Void? = try await lock.withLock(before: .now + .milliseconds(100)) { _ in ran = true }
        #expect(none == nil)
        #expect(!ran)
        try await other.unlock()
    }

    @Test("waitUntilLost returns when the backend is terminated; the token is gone and unlock says lockLost")
    func waitUntilLostAfterTermination() async throws {
        let lock = try PostgresLock(connectionString: server.tcpConnectionString, name: "async-lost-terminate")
        #expect(try await lock.tryLock())
        let pid = try #require(try PGTest.holderPID(server, key: lock.key))
        // The wait and the measurement on a thread of their own (DedicatedThreadExecutor).
        let waited = try await onDedicatedThread {
            async let lost: Void = lock.waitUntilLost()
            // Registered: the watcher sees the session end whether it registered before or after.
            try server.execute("SELECT pg_terminate_backend(\(pid))")
            let clock = ContinuousClock()
            let start = clock.now
            await lost
            return clock.now - start
        }
        #expect(waited < .seconds(10))
        #expect(lock.fencingToken == nil)
        let error = try await #require(throws: PostgresLockError.self) { try await lock.unlock() }
        #expect(error.code == .lockLost)
        #expect(try await lock.tryLock())
        try await lock.unlock()
    }

    @Test("waitUntilLost returns when the server restarts")
    func waitUntilLostAfterRestart() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let lock = try PostgresLock(connectionString: server.connectionString, name: "async-lost-restart")
        #expect(try await lock.tryLock())
        let waiting = Task { await lock.waitUntilLost() }
        // Whether the waiter registers before or after the shutdown, it sees the session end.
        try server.control("stop")
        await waiting.value
        #expect(lock.fencingToken == nil)
        try server.control("start")
        #expect(try await !lock.checkHeld())
    }

    /// Regression (seen once in a full test run, where the waiter started after the shutdown):
    /// the socket of a session that the server already ended fires as soon as the watcher
    /// registers, while waitUntilLost still holds the object's gate, and the handler dropped the
    /// event when the gate was taken. Here the reactor usually wakes after the gate is let go,
    /// so a handler that drops the event passes too (tried); what this holds is the outcome.
    @Test("waitUntilLost called after the server already ended the session returns")
    func waitUntilLostAfterTheEnd() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let lock = try PostgresLock(connectionString: server.connectionString, name: "async-lost-already")
        #expect(try await lock.tryLock())
        try server.control("stop")
        await lock.waitUntilLost()
        #expect(lock.fencingToken == nil)
        try server.control("start")
        #expect(try await !lock.checkHeld())
    }

    @Test("waitUntilLost returns at once when not held, when unlock releases the lock, and when cancelled")
    func waitUntilLostOtherEndings() async throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "async-lost-other")
        await lock.waitUntilLost()  // not held: at once

        #expect(try await lock.tryLock())
        let first = Task { await lock.waitUntilLost() }
        let second = Task { await lock.waitUntilLost() }
        #expect(try await eventually { lock.lossWaiterCount == 2 })
        try await lock.unlock()
        await first.value
        await second.value

        #expect(try await lock.tryLock())
        let cancelled = Task { await lock.waitUntilLost() }
        #expect(try await eventually { lock.lossWaiterCount == 1 })
        cancelled.cancel()
        await cancelled.value
        #expect(lock.lossWaiterCount == 0)
        #expect(try await lock.checkHeld(), "a cancelled waiter changes nothing")
        try await lock.unlock()
    }

    /// Polls `condition` every 2 ms (suspending, not blocking) until it holds or 60 s passed:
    /// patience for a precondition, not a promise measured, long enough for the tasks that make
    /// it true to be scheduled while other tests keep the shared pool busy.
    func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            if try condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
