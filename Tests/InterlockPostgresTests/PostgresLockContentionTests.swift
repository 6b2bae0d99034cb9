// Contention profiling of PostgresLock (the package trait ContentionProfiling, `make
// contention`): a lock(before:) that waited in the server is recorded under the lock's name. An
// exit test, so that INTERLOCK_CONTENTION is read fresh; the child starts its own throwaway
// server (the parent's is not shared across processes).

#if INTERLOCK_CONTENTION
import Interlock
import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

@Suite("PostgresLock, contention profiling")
struct PostgresLockContentionTests {
    @Test("a lock(before:) that waited in the server is recorded as a PostgresLock wait")
    func waitsAreRecorded() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setenv("INTERLOCK_CONTENTION", "1", 1)
            func fail(_ message: String) -> Never {
                let bytes = Array("contention test failed: \(message)\n".utf8)
                _ = write(2, bytes, bytes.count)
                exit(0)
            }
            do {
                let server = try PostgresServer()
                defer { server.stop() }
                let holder = try PostgresLock(connectionString: server.connectionString, name: "contention-pg")
                let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "contention-pg")
                guard try holder.tryLock() else { fail("the holder's tryLock failed") }
                let waiting = PGThread { try waiter.lock(before: .now + .seconds(30)) }
                let queued = try PGTest.eventually(within: .seconds(10)) {
                    try PGTest.someoneWaits(server, key: holder.key) || waiting.isFinished
                }
                guard queued && !waiting.isFinished else { fail("the waiter never queued in the server") }
                try holder.unlock()
                guard try waiting.join().get() else { fail("the waiter did not get the lock") }
                try waiter.unlock()
                let sites = ContentionProfiling.snapshot().sites.filter { $0.kind == "PostgresLock" }
                guard sites.count == 1, sites[0].lock == "\"contention-pg\"", sites[0].contendedAcquisitions == 1
                else { fail("PostgresLock sites: \(sites)") }
            } catch {
                fail("\(error)")
            }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        let failure = text.split(separator: "\n").first { $0.hasPrefix("contention test failed: ") }
        #expect(failure == nil, "\(failure.map(String.init) ?? "")")
    }
}
#endif
