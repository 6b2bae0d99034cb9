// PostgresLock.lock(before:): at once when free; false no earlier than the deadline when held;
// the lock when the holder releases it during the wait (the waiter queued in the server, as
// pg_locks shows); a deadline in the past is a tryLock; a distant deadline waits.

import Interlock
import InterlockPostgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("PostgresLock, lock(before:)", .blocking)
struct PostgresLockWaitingTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("a free lock is taken at once")
    func freeLockIsTakenAtOnce() throws {
        let lock = try PostgresLock(connectionString: server.connectionString, name: "waiting-free")
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try lock.lock(before: start + .seconds(30)))
        #expect(clock.now - start < .seconds(5))  // a round trip, far from the deadline
        #expect(lock.fencingToken != nil)
        #expect(try lock.checkHeld())
        try lock.unlock()
    }

    @Test("held by another object: false, and never before the deadline")
    func heldByAnotherTimesOutNoEarlierThanTheDeadline() throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "waiting-timeout")
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "waiting-timeout")
        #expect(try holder.tryLock())
        let clock = ContinuousClock()
        for wait in [Duration.milliseconds(1), .milliseconds(30), .milliseconds(250), .milliseconds(700)] {
            let deadline = clock.now + wait
            #expect(try !waiter.lock(before: deadline))
            let returned = clock.now
            #expect(returned >= deadline, "returned \(deadline - returned) before the deadline")
            #expect(returned - deadline < .seconds(3), "returned \(returned - deadline) late")
            #expect(waiter.fencingToken == nil)
        }
        // The waiter's session survived the timeouts and queues nowhere; the holder still holds.
        #expect(try !PGTest.someoneWaits(server, key: holder.key))
        #expect(try holder.checkHeld())
        #expect(try !waiter.tryLock())
        try holder.unlock()
        #expect(try waiter.tryLock())
        try waiter.unlock()
    }

    /// Starts `waiter.lock(before: deadline)` on a thread of its own, waits until the server shows
    /// it queued on the lock, releases `holder`, and checks that the waiter got the lock with a
    /// larger token.
    func releaseDuringTheWait(deadline: ContinuousClock.Instant, name: String) throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: name)
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: name)
        #expect(try holder.tryLock())
        let holderToken = try #require(holder.fencingToken)
        let waiting = PGThread { try waiter.lock(before: deadline) }
        // The waiter is queued in the server (a lock request not granted) before the release.
        let queued = try PGTest.eventually(within: .seconds(10)) {
            try PGTest.someoneWaits(server, key: holder.key) || waiting.isFinished
        }
        #expect(queued)
        #expect(!waiting.isFinished, "lock(before:) returned while the lock was held")
        try holder.unlock()
        let acquired = try waiting.join().get()
        #expect(acquired)
        let waiterToken = try #require(waiter.fencingToken)
        #expect(waiterToken > holderToken)
        #expect(try waiter.holderInfo()?.isThisObject == true)
        #expect(try !holder.tryLock())
        try waiter.unlock()
    }

    @Test("the waiter gets the lock when the holder releases it during the wait")
    func holderReleasesDuringTheWait() throws {
        try releaseDuringTheWait(deadline: .now + .seconds(30), name: "waiting-handover")
    }

    // Regression: the wait's lock_timeout was the time left in milliseconds, unclamped; past
    // 2^31 - 1 ms (24.8 days) the server refused it (22023) and lock(before:) threw serverError,
    // and past 2^63 / 1000 s the multiplication trapped. A distant deadline means "wait".
    @Test(
        "a deadline past lock_timeout's range (24.8 days) waits like any other",
        arguments: [Duration.seconds(30 * 24 * 3600), .seconds(Int64.max / 2)])
    func distantDeadlineWaits(wait: Duration) throws {
        try releaseDuringTheWait(deadline: .now + wait, name: "waiting-distant-\(wait.components.seconds)")
    }

    @Test("a deadline in the past makes lock(before:) a tryLock")
    func pastDeadlineIsATryLock() throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "waiting-past")
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "waiting-past")
        let clock = ContinuousClock()
        // Free: taken.
        #expect(try waiter.lock(before: clock.now - .seconds(1)))
        #expect(waiter.fencingToken != nil)
        try waiter.unlock()
        // Held: false at once, without queueing.
        #expect(try holder.tryLock())
        let start = clock.now
        #expect(try !waiter.lock(before: start - .seconds(1)))
        #expect(clock.now - start < .seconds(2))
        #expect(waiter.fencingToken == nil)
        #expect(try !PGTest.someoneWaits(server, key: holder.key))
        try holder.unlock()
    }

    // Regression: the server may grant the lock just as lock_timeout fires; the statement then
    // fails with 55P03 while the session keeps the lock. lock(before:) read that as "not
    // taken", so the object believed it did not hold a lock that its session held, and
    // everyone else was locked out (the postgres-lock stress workload found it).
    @Test("a wait that times out as the holder releases either takes the lock or leaves it free")
    func timeoutRacingTheRelease() throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "waiting-race")
        let waiter = try PostgresLock(connectionString: server.connectionString, name: "waiting-race")
        var taken = 0
        for round in 0..<200 {
            #expect(try holder.tryLock())
            let releaser = PGThread<Void> {
                // Release at about the waiter's deadline: sometimes before, sometimes after.
                var pause = timespec(tv_sec: 0, tv_nsec: Int(500_000 + (round % 7) * 150_000))
                nanosleep(&pause, nil)
                try holder.unlock()
            }
            let got = try waiter.lock(before: .now + .milliseconds(1))
            _ = try releaser.join().get()
            if got {
                taken += 1
                #expect(try waiter.checkHeld())
                try waiter.unlock()
            }
            // Whatever the waiter answered, nobody holds the lock now.
            #expect(try waiter.holderInfo() == nil, "round \(round): got \(got), yet someone holds the lock")
            if try waiter.holderInfo() != nil { try? waiter.unlock(); return }
        }
        print("timeoutRacingTheRelease: the waiter took the lock in \(taken) of 200 rounds")
    }
}
