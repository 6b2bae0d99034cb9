// Stress workload `lock-mutual-exclusion`: every thread takes one Lock (futex mutex) through
// each of its entry points and runs the ck validator's critical section under it.
//
// Operations, chosen at random per section: `lock()` (6 in 8), `tryLock()` retried with a
// yield until it succeeds (1 in 8), and `lock(before:)` with a deadline 1 ms ahead, retried
// after each timeout (1 in 8) — so the spinning, parking, waking and timed paths all run.
//
// Invariants checked:
//   - mutual exclusion: each section sees the plain counter read 0, 10, 0 and nobody else
//     inside (LockWorkloadSupport.swift);
//   - no lost section: the plain count of sections equals the sum of the workers' counts;
//   - a timed attempt never reports a timeout before its deadline.

import CStressSupport
import Interlock

extension Workload {
    /// `lock-mutual-exclusion`; see the file comment.
    static let lockMutualExclusion = Workload(
        name: "lock-mutual-exclusion",
        summary: "Lock: ck validator section via lock/tryLock/lock(before:); exclusion, exact count, no early timeout"
    ) { context in
        let lock = Lock()
        lock.name = "lock-mutual-exclusion"
        let state = LockProtectedState()
        let perThread = context.runThreads { worker -> Int in
            var sections = 0
            var reported = false
            let me = worker.index  // copied: `worker` is inout, busy inside operation {}
            while worker.keepRunning {
                let choice = worker.random.next() & 7
                let problem: String? = worker.operation {
                    var early: String? = nil
                    switch choice {
                    case 0:
                        while !lock.tryLock() { ilk_stress_thread_yield() }
                    case 1:
                        while true {
                            let deadline = ContinuousClock.now + .milliseconds(1)
                            if lock.lock(before: deadline) { break }
                            if ContinuousClock.now < deadline { early = "lock(before:) timed out early" }
                        }
                    default:
                        lock.lock()
                    }
                    let problem = state.criticalSection(thread: me)
                    lock.unlock()
                    return problem ?? early
                }
                sections += 1
                if let problem, !reported {
                    reported = true
                    context.fail(problem)
                }
            }
            return sections
        }
        let expected = perThread.reduce(0, +)
        context.check(
            state.sections == expected,
            "\(state.sections) sections recorded under the lock, \(expected) run: updates lost")
        context.check(state.counter == 0, "the ck counter ended at \(state.counter), not 0")
    }
}
