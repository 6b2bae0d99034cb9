// PostgresLock when a holder's host vanishes (power loss, a partition): the holder is a process
// in a network namespace whose link is cut, so that nothing it sent or would send arrives and
// nothing answers the server. The server releases the lock when its own socket to the holder
// fails: PostgresLock sets the server side's TCP keepalives for its session (idle 10 s, then
// 3 probes 5 s apart), where libpq's keepalives act on the client's socket only. The holder
// learns it too: its waitUntilLost() returns when its own keepalives give up on the connection.
//
// Regression (issue 29): with the kernel's defaults on the server's socket, nobody could take
// the lock 180 s after the cut (the socket's keepalive timer said 119 minutes).

import Interlock
import InterlockPostgres
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("PostgresLock, a holder's host cut off", .serialized, .timeLimit(.minutes(4)))
struct PostgresLockPartitionTests {
    @Test(
        "a holder whose network is cut is released by the server, and its waitUntilLost returns, within about 30 s",
        .enabled(if: NetworkNamespace.available, "needs root and ip netns (a network namespace as the holder's host)"))
    func cutOffHolderIsReleased() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let host = try NetworkNamespace(index: 0)
        defer { host.remove() }
        try server.listen(on: host.hostAddress, allowing: host.address)

        let name = "partition-holder"
        let remote = "host=\(host.hostAddress) port=\(server.port) user=postgres dbname=postgres"
        let child = try PGHelper.spawn(["hold-until-lost", remote, name], launcher: host.command([]))
        defer { child.kill(SIGKILL) }
        let line = try #require(child.readLine(within: .seconds(30)), "the holder did not report holding")
        let fields = line.split(separator: " ")
        try #require(fields.count == 2 && fields[0] == "held", "unexpected line from the holder: \(line)")
        let holderToken = try #require(Int64(fields[1]))

        let lock = try PostgresLock(connectionString: server.connectionString, name: name)
        #expect(try await !lock.tryLock())
        let holder = try #require(try lock.holderInfo())
        #expect(holder.clientAddress == host.address)

        try host.cut()
        let clock = ContinuousClock()
        let cut = clock.now
        // The waiter queues in the server (an async wait: no thread blocks), and is granted the
        // lock when the server ends the holder's session; meanwhile the holder, cut off, waits
        // in waitUntilLost() for its own side to give up (read on a thread: the pipe blocks).
        let output = child.output
        let noticed = PGThread { () -> (String?, Duration) in
            let line = PGHelper.Child.readLine(from: output, within: .seconds(120))
            return (line, clock.now - cut)
        }
        // The wait and its measurement on a thread of their own (DedicatedThreadExecutor).
        let (taken, released) = try await onDedicatedThread {
            (try await lock.lock(before: cut + .seconds(120)), clock.now - cut)
        }
        #expect(taken, "the lock was not released within 120 s of the cut")
        // 10 s idle + 3 probes 5 s apart = 25 s, plus the probes' timing and the grant.
        #expect(released < .seconds(40), "released \(released) after the cut")
        #expect(try #require(lock.fencingToken) > holderToken)
        try await lock.unlock()

        while !noticed.isFinished { try await Task.sleep(for: .milliseconds(100)) }
        let (lostLine, after) = try noticed.join().get()
        #expect(lostLine == "lost", "the holder's waitUntilLost did not return: \(lostLine ?? "nothing")")
        #expect(after < .seconds(45), "the holder noticed \(after) after the cut")
        #expect(child.readLine(within: .seconds(5)) == "token nil")
    }
}
