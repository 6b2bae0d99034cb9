// PostgresLock between threads of one process, each with its own object (the documented way):
// one holder at a time, and fencing tokens in the order of the critical sections.

import Interlock
import Synchronization
import Testing

@testable import InterlockPostgres

@Suite("PostgresLock between threads", .blocking)
struct PostgresLockThreadTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("4 threads × 25 waiting acquisitions: never two holders, tokens in critical-section order")
    func threadsWithTheirOwnObjectsExclude() throws {
        let threads = 4, iterations = 25
        let name = "threads-exclusion"
        let locks = try (0..<threads).map { index in
            try PostgresLock(
                connectionString: index % 2 == 0 ? server.connectionString : server.tcpConnectionString, name: name)
        }
        // Inside the critical section: `inside` goes 0 -> 1 -> 0, and the token is appended to
        // `tokens` (a second holder would find 1, or append out of order).
        let inside = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let tokens = PGLocked<[Int64]>([])
        let workers = locks.map { lock in
            PGThread { () throws -> Int in
                var taken = 0
                for _ in 0..<iterations {
                    guard try lock.lock(before: .now + .seconds(30)) else { continue }
                    taken += 1
                    if inside.add(1, ordering: .acquiringAndReleasing).newValue != 1 {
                        overlaps.add(1, ordering: .relaxed)
                    }
                    if let token = lock.fencingToken { tokens.withLock { $0.append(token) } }
                    inside.subtract(1, ordering: .acquiringAndReleasing)
                    try lock.unlock()
                }
                return taken
            }
        }
        let taken = try workers.map { try $0.join().get() }
        #expect(taken == Array(repeating: iterations, count: threads))
        #expect(overlaps.load(ordering: .relaxed) == 0)
        let recorded = tokens.withLock { $0 }
        #expect(recorded.count == threads * iterations)
        #expect(recorded == recorded.sorted() && Set(recorded).count == recorded.count, "tokens out of order")
    }
}
