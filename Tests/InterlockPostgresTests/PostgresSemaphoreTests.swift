// PostgresSemaphore: permits counted across sessions, a waiting acquire woken by a release and
// bounded by its deadline, cancellation and the holder's death leaving nothing behind, the
// permit count checked, and processes on several hosts (network namespaces, where this machine
// can make them) never more than `permits` at once.

import Foundation
import Interlock
import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("PostgresSemaphore", .timeLimit(.minutes(3)))
struct PostgresSemaphoreTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    /// How many sessions hold a slot of the semaphore `name` of `permits`.
    func slotHolders(_ name: String, permits: Int) throws -> Int {
        try _PostgresSemaphoreSQL.slotKeys(name: name, permits: permits).reduce(0) {
            $0 + (try PGTest.advisoryLockRows(server, key: $1).filter(\.granted).count)
        }
    }

    /// How many sessions wait for a permit of `name` (they hold its wait key shared).
    func waiters(_ name: String) throws -> Int {
        try PGTest.advisoryLockRows(server, key: _PostgresSemaphoreSQL.waitKey(name: name)).filter(\.granted).count
    }

    /// Two objects of one permit named `name`: a holder, and a waiter on `waiterConnection`.
    func holderAndWaiter(_ name: String, waiterConnection: String? = nil) throws -> (
        PostgresSemaphore, PostgresSemaphore
    ) {
        (
            try PostgresSemaphore(connectionString: server.connectionString, name: name, permits: 1),
            try PostgresSemaphore(
                connectionString: waiterConnection ?? server.connectionString, name: name, permits: 1)
        )
    }

    /// Waits until `count` sessions wait for a permit of `name`.
    func waitForWaiters(_ name: String, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try waiters(name) != count {
            try #require(ContinuousClock.now < deadline, "\(count) waiters did not appear within 20 s")
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("at most `permits` holders; a release lets the next in; tokens unique and increasing", .blocking)
    func permitsAreCounted() throws {
        let name = "semaphore-count"
        let semaphores = try (0..<3).map { index in
            try PostgresSemaphore(
                connectionString: index == 1 ? server.tcpConnectionString : server.connectionString, name: name,
                permits: 2)
        }
        #expect(try semaphores[0].tryAcquire())
        #expect(try semaphores[1].tryAcquire())
        #expect(try !semaphores[2].tryAcquire())
        #expect(semaphores[2].fencingToken == nil)
        #expect(try !semaphores[0].tryAcquire(), "an object holds at most one permit")
        #expect(try slotHolders(name, permits: 2) == 2)
        let first = try #require(semaphores[0].fencingToken)
        let second = try #require(semaphores[1].fencingToken)
        #expect(second > first)
        #expect(try semaphores[0].checkHeld())

        try semaphores[0].release()
        #expect(semaphores[0].fencingToken == nil)
        #expect(try !semaphores[0].checkHeld())
        #expect(try semaphores[2].tryAcquire())
        #expect(try #require(semaphores[2].fencingToken) > second)
        #expect(try !semaphores[0].tryAcquire())

        let error = try #require(throws: PostgresLockError.self) { try semaphores[0].release() }
        #expect(error.code == .notHeld)
        #expect(error.lockName == name)
        try semaphores[1].release()
        try semaphores[2].release()
        #expect(try slotHolders(name, permits: 2) == 0)
    }

    @Test("one permit per slot: 5 permits, 5 objects take all, a sixth finds none", .blocking)
    func everySlotIsFound() throws {
        let name = "semaphore-every-slot"
        let semaphores = try (0..<6).map { _ in
            try PostgresSemaphore(connectionString: server.connectionString, name: name, permits: 5)
        }
        for semaphore in semaphores.prefix(5) { #expect(try semaphore.tryAcquire()) }
        #expect(try !semaphores[5].tryAcquire())
        #expect(try slotHolders(name, permits: 5) == 5)
        for semaphore in semaphores.prefix(5) { try semaphore.release() }
    }

    @Test("a waiting acquire is woken by a release, and holds the permit afterwards")
    func acquireIsWokenByARelease() async throws {
        let name = "semaphore-wake"
        let (holder, waiter) = try holderAndWaiter(name, waiterConnection: server.tcpConnectionString)
        // No timed recheck within the test: only the release's notification can wake the waiter.
        waiter.box.session.recheckInterval = .seconds(600)
        #expect(try await holder.acquire(before: .now))
        let held = try #require(holder.fencingToken)
        let waiting = Task { try await waiter.acquire(before: .now + .seconds(60)) }
        try await waitForWaiters(name, 1)
        try await holder.release()
        #expect(try await waiting.value)
        #expect(try #require(waiter.fencingToken) > held)
        #expect(try waiters(name) == 0, "the waiter still holds the wait key")
        #expect(try slotHolders(name, permits: 1) == 1)
        #expect(try await !holder.tryAcquire())
        try await waiter.release()
    }

    @Test("a waiting acquire gives up at its deadline, not before, and leaves nothing behind")
    func acquireGivesUpAtTheDeadline() async throws {
        let name = "semaphore-deadline"
        let (holder, waiter) = try holderAndWaiter(name)
        #expect(try await holder.tryAcquire())
        let start = ContinuousClock.now
        #expect(try await !waiter.acquire(before: start + .milliseconds(700)))
        #expect(ContinuousClock.now - start >= .milliseconds(700))
        #expect(waiter.fencingToken == nil)
        #expect(try waiters(name) == 0)
        #expect(try slotHolders(name, permits: 1) == 1)
        try await holder.release()
        #expect(try await waiter.acquire(before: .now))
        try await waiter.release()
    }

    @Test("cancelling a waiting acquire throws CancellationError and holds nothing, on the server either")
    func cancelledAcquireHoldsNothing() async throws {
        let name = "semaphore-cancel"
        let (holder, waiter) = try holderAndWaiter(name)
        #expect(try await holder.tryAcquire())
        let waiting = Task { try await waiter.acquire(before: .now + .seconds(60)) }
        try await waitForWaiters(name, 1)
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(try waiters(name) == 0)
        #expect(try slotHolders(name, permits: 1) == 1)
        #expect(waiter.fencingToken == nil)
        try await holder.release()
        #expect(try slotHolders(name, permits: 1) == 0)
        // The object works afterwards.
        #expect(try await waiter.acquire(before: .now + .seconds(5)))
        try await waiter.release()
    }

    @Test("a holder whose backend is terminated: the waiter gets the permit, the holder learns of the loss")
    func terminatedHolderFreesItsPermit() async throws {
        let name = "semaphore-terminated"
        let (holder, waiter) = try holderAndWaiter(name)
        #expect(try await holder.tryAcquire())
        let lost = try #require(holder.fencingToken)
        let slot = _PostgresSemaphoreSQL.slotKeys(name: name, permits: 1)[0]
        let pid = try #require(try PGTest.holderPID(server, key: slot))
        let waiting = Task { try await waiter.acquire(before: .now + .seconds(30)) }
        try await waitForWaiters(name, 1)
        let terminated = try server.execute("SELECT pg_terminate_backend(\(pid), 10000)")
        #expect(terminated[0][0] == "t")
        // No release notified the waiter: it finds the permit at its next recheck (0.5 s).
        #expect(try await waiting.value)
        #expect(try #require(waiter.fencingToken) > lost)
        #expect(try await !holder.checkHeld())
        #expect(holder.fencingToken == nil)
        let error = try #require(throws: PostgresLockError.self) { try holder.release() }
        #expect(error.code == .lockLost)
        try await waiter.release()
    }

    @Test("10 tasks share 3 permits through acquire and release: never more than 3 inside")
    func tasksShareThePermits() async throws {
        let name = "semaphore-tasks"
        let permits = 3
        let inside = PGLocked((now: 0, most: 0, entries: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                let semaphore = try PostgresSemaphore(
                    connectionString: server.connectionString, name: name, permits: permits)
                semaphore.box.session.recheckInterval = .seconds(600)  // woken by releases only
                group.addTask {
                    for _ in 0..<10 {
                        // A liveness bound, not a timing goal: alone this test takes about 1 s,
                        // but the full suite shares 2 cores among every test at once (a CI run
                        // took 168 s here, and two acquisitions passed 60 s, while synchronous
                        // tests still held the cooperative pool; since `.blocking`, 56 s).
                        try #require(try await semaphore.acquire(before: .now + .seconds(600)))
                        inside.withLock {
                            $0.now += 1
                            $0.entries += 1
                            $0.most = max($0.most, $0.now)
                        }
                        try await Task.sleep(for: .milliseconds(1))
                        inside.withLock { $0.now -= 1 }
                        try await semaphore.release()
                    }
                }
            }
            try await group.waitForAll()
        }
        let seen = inside.withLock { $0 }
        #expect(seen.entries == 100)
        #expect(seen.most <= permits, "\(seen.most) holders at once")
        #expect(try slotHolders(name, permits: permits) == 0)
        #expect(try waiters(name) == 0)
    }

    @Test("an invalid permit count traps with a message naming the semaphore, before connecting")
    func invalidPermitsTrap() async {
        let zero = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? PostgresSemaphore(connectionString: "", name: "bad-permits", permits: 0)
        }
        let tooMany = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? PostgresSemaphore(connectionString: "", name: "bad-permits", permits: 10_001)
        }
        for (result, permits) in [(zero, 0), (tooMany, 10_001)] {
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(
                text.contains("PostgresSemaphore \"bad-permits\": permits must be between 1 and 10000, got \(permits)"),
                "standard error: \(text)")
        }
    }
}

@Suite("PostgresSemaphore between processes on several hosts", .serialized, .timeLimit(.minutes(4)))
struct PostgresSemaphoreHostsTests {
    @Test("4 processes (in network namespaces where possible) × 25 holds of 2 permits: never more than 2 inside")
    func processesNeverExceedThePermits() async throws {
        let (name, permits, processes, iterations) = ("semaphore-hosts", 2, 4, 25)
        // Servers, namespaces and child processes block for seconds: on a thread of their own,
        // which returns what the processes wrote; the checks are made here, in the test's task.
        let (endings, records, final) = try await onThread {
            try Self.runProcesses(name: name, permits: permits, processes: processes, iterations: iterations)
        }
        #expect(endings == Array(repeating: PGHelper.Ending.success, count: processes))
        var tokens: [Int64] = []
        var most = 0
        for (index, text) in records.enumerated() {
            let lines = text.split(separator: "\n")
            #expect(lines.count == iterations, "process \(index) recorded \(lines.count) holds")
            for line in lines {
                let fields = line.split(separator: " ")
                let inside = try #require(fields.count == 2 ? Int(fields[0]) : nil, "bad record \(line)")
                tokens.append(try #require(Int64(fields[1]), "bad record \(line)"))
                most = max(most, inside)
            }
        }
        #expect(most >= 1 && most <= permits, "\(most) holders at once")
        #expect(Set(tokens).count == tokens.count, "a token was handed out twice")
        #expect(Int(final.dropLast()) == 0)
    }

    /// Runs the processes (see the test). - Returns: how each ended, what each wrote, and the
    /// occupancy file's final text.
    static func runProcesses(name: String, permits: Int, processes: Int, iterations: Int) throws -> (
        [PGHelper.Ending], [String], String
    ) {
        let server = try PostgresServer()
        defer { server.stop() }
        // Two "hosts" of their own where this machine can make network namespaces (root, ip);
        // else every process connects from this host.
        var hosts: [NetworkNamespace] = []
        defer { for host in hosts { host.remove() } }
        if NetworkNamespace.available {
            for index in 1...2 { hosts.append(try NetworkNamespace(index: index)) }
            try server.listen(on: hosts.map { (address: $0.hostAddress, client: $0.address) })
        }
        let directory = try PGTest.temporaryDirectory()
        defer { PGTest.removeDirectory(directory) }
        let occupancy = directory + "/occupancy"
        try Data((String(repeating: "0", count: 20) + "\n").utf8).write(to: URL(fileURLWithPath: occupancy))

        let children = try (0..<processes).map { index in
            let out = directory + "/records-\(index)"
            if !hosts.isEmpty, index < 2 {
                let host = hosts[index]
                let remote = "host=\(host.hostAddress) port=\(server.port) user=postgres dbname=postgres"
                return try PGHelper.spawn(
                    ["semaphore", remote, name, "\(permits)", "\(iterations)", occupancy, out],
                    launcher: host.command([]))
            }
            let local = index % 2 == 0 ? server.connectionString : server.tcpConnectionString
            return try PGHelper.spawn(["semaphore", local, name, "\(permits)", "\(iterations)", occupancy, out])
        }
        let endings = children.map { $0.wait() }
        let records = (0..<processes).map {
            (try? String(contentsOfFile: directory + "/records-\($0)", encoding: .utf8)) ?? ""
        }
        return (endings, records, try String(contentsOfFile: occupancy, encoding: .utf8))
    }
}
