// Stress workload `spinlock-mutual-exclusion`: every thread takes one SpinLock through
// `lock()` (7 in 8) or `tryLock()` retried until it succeeds (1 in 8), and runs the ck
// validator's critical section under it. With more threads than cores (the default is twice
// the cores) holders are descheduled while others wait, which is where a spin lock that never
// yields stalls.
//
// Invariants checked:
//   - mutual exclusion: each section sees the plain counter read 0, 10, 0 and nobody else
//     inside (LockWorkloadSupport.swift);
//   - no lost section: the plain count of sections equals the sum of the workers' counts.

import Interlock

extension Workload {
    /// `spinlock-mutual-exclusion`; see the file comment.
    static let spinLockMutualExclusion = Workload(
        name: "spinlock-mutual-exclusion",
        summary: "SpinLock: ck validator section via lock/tryLock; exclusion, exact count"
    ) { context in
        let lock = SpinLock()
        let state = LockProtectedState()
        let perThread = context.runThreads { worker -> Int in
            var sections = 0
            var reported = false
            let me = worker.index  // copied: `worker` is inout, busy inside operation {}
            while worker.keepRunning {
                let useTry = worker.random.next() & 7 == 0
                let problem: String? = worker.operation {
                    if useTry {
                        while !lock.tryLock() {}
                    } else {
                        lock.lock()
                    }
                    let problem = state.criticalSection(thread: me)
                    lock.unlock()
                    return problem
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
