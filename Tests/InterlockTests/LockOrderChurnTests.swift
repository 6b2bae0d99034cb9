// Lock-order checking while locks are freed as other threads search the graph: the search
// loads each lock it passes through from the node's weak reference, and if the lock's owner
// drops the last other reference meanwhile, the search's release runs the lock's deinit, whose
// `forget` takes the graph's mutex. It must not do so while the search still holds that mutex
// (it would wait for itself for ever): a regression test, which hung within a second before
// the fix. A watchdog turns a hang into a failed exit status.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: locks freed during a graph search")
struct LockOrderChurnTests {
    @Test("one thread frees locks reachable from L while another searches from L: no hang, no report")
    func freeDuringSearch() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let outer = namedLock("L")
            let finished = Interlock.Semaphore(value: 0)
            let rounds = 200_000
            // L -> fresh lock, which is then freed (its node leaves the graph in its deinit).
            _ = TestThread {
                for _ in 0..<rounds { holding([.lock(outer), .lock(Lock())]) }
                finished.signal()
            }
            // Fresh lock -> L: a new edge each time, so a search from L over L's edges.
            _ = TestThread {
                for _ in 0..<rounds { holding([.lock(Lock()), .lock(outer)]) }
                finished.signal()
            }
            guard _signalled(finished, times: 2, within: .seconds(60)) else {
                writeToStandardError("child: the threads did not finish (a hang)")
                exit(7)
            }
        }
        expectLockOrderOutput(result, reports: 0)
    }
}

/// Whether `semaphore` was signalled `times` times within `limit` (a thread's blocking wait).
private func _signalled(_ semaphore: Interlock.Semaphore, times: Int, within limit: Duration) -> Bool {
    let deadline = ContinuousClock.now + limit
    return (0..<times).allSatisfy { _ in semaphore.wait(before: deadline) }
}
#endif
