// PostgresLock between processes, with interlock-pg-helper as the children: a holder killed
// with SIGKILL loses the lock to the server, which hands it on; and several processes
// incrementing a counter file under the lock never lose an increment, with fencing tokens that
// follow the order of the increments.

import Foundation
import Interlock
import InterlockPostgres
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("PostgresLock between processes", .blocking)
struct PostgresLockProcessTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("a holder killed with SIGKILL: the server releases its lock, and the parent takes it")
    func killedHolderReleasesTheLock() throws {
        let name = "process-killed-holder"
        let lock = try PostgresLock(connectionString: server.connectionString, name: name)
        let child = try PGHelper.spawn(["hold", server.tcpConnectionString, name])
        let line = try #require(child.readLine(within: .seconds(20)), "the child did not report holding")
        let fields = line.split(separator: " ")
        try #require(fields.count == 2 && fields[0] == "held", "unexpected line from the child: \(line)")
        let childToken = try #require(Int64(fields[1]))

        // The child holds it, as the server and this process see it.
        let holder = try #require(try lock.holderInfo())
        #expect(!holder.isThisObject)
        #expect(holder.clientAddress == "127.0.0.1")
        #expect(try !lock.tryLock())

        #expect(child.kill(SIGKILL) == PGHelper.Ending(exitCode: nil, signal: SIGKILL))
        let acquired = try PGTest.eventually(within: .seconds(10)) { try lock.tryLock() }
        #expect(acquired, "the lock of a killed holder was not released within 10 s")
        let token = try #require(lock.fencingToken)
        #expect(token > childToken)
        #expect(try lock.holderInfo()?.isThisObject == true)
        #expect(try PGTest.advisoryLockRows(server, key: lock.key).count == 1)
        try lock.unlock()
    }

    @Test("4 processes × 50 increments of a counter file under the lock: none lost, tokens in increment order")
    func processesIncrementACounterUnderTheLock() throws {
        let processes = 4, iterations = 50
        let name = "process-counter"
        let directory = try PGTest.temporaryDirectory()
        defer { PGTest.removeDirectory(directory) }
        let counter = directory + "/counter"
        try Data(String(repeating: "0", count: 20).appending("\n").utf8).write(to: URL(fileURLWithPath: counter))

        let children = try (0..<processes).map { index in
            try PGHelper.spawn([
                "count", index % 2 == 0 ? server.connectionString : server.tcpConnectionString, name, counter,
                "\(iterations)", directory + "/tokens-\(index)",
            ])
        }
        let endings = children.map { $0.wait() }
        #expect(endings == Array(repeating: PGHelper.Ending.success, count: processes))

        let final = try String(contentsOfFile: counter, encoding: .utf8)
        #expect(Int(final.dropLast()) == processes * iterations, "counter reads \(final)")

        // Each process's records: "VALUE TOKEN", one per increment.
        var records: [(value: Int, token: Int64, process: Int)] = []
        for index in 0..<processes {
            let text = try String(contentsOfFile: directory + "/tokens-\(index)", encoding: .utf8)
            let lines = text.split(separator: "\n")
            #expect(lines.count == iterations, "process \(index) recorded \(lines.count) increments")
            for line in lines {
                let fields = line.split(separator: " ")
                let value = try #require(fields.count == 2 ? Int(fields[0]) : nil, "bad record \(line)")
                let token = try #require(Int64(fields[1]), "bad record \(line)")
                records.append((value, token, index))
            }
        }
        // Every count was written exactly once ...
        #expect(records.map(\.value).sorted() == Array(1...processes * iterations))
        // ... the tokens are distinct, and in the order of the counts they were written with.
        #expect(Set(records.map(\.token)).count == records.count)
        let inOrder = records.sorted { $0.value < $1.value }
        for (earlier, later) in zip(inOrder, inOrder.dropFirst()) where later.token <= earlier.token {
            Issue.record(
                "count \(later.value) (process \(later.process)) was written with token \(later.token), not above count \(earlier.value)'s \(earlier.token) (process \(earlier.process))"
            )
        }
    }
}
