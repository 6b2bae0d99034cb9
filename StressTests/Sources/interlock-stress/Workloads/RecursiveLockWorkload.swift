// Stress workload `recursive-lock-nesting`: every thread takes one RecursiveLock 1 to 4 levels
// deep — each level through `lock()`, `tryLock()` or `lock(before:)`, which for the owner must
// all succeed at once — runs the ck validator's section at the innermost level, and unwinds.
//
// Invariants checked:
//   - mutual exclusion across threads: the ck section (LockWorkloadSupport.swift), and a plain
//     owner slot that must hold the thread's own id at every level of its nesting;
//   - re-entry by the owner never fails: `tryLock()` and `lock(before:)` at depth >= 1 return
//     `true` (a past deadline included);
//   - no lost section: the plain count of sections equals the sum of the workers' counts.

import Interlock

extension Workload {
    /// `recursive-lock-nesting`; see the file comment.
    static let recursiveLockNesting = Workload(
        name: "recursive-lock-nesting",
        summary: "RecursiveLock: 1-4 levels via lock/tryLock/lock(before:); exclusion, owner re-entry, exact count"
    ) { context in
        let lock = RecursiveLock()
        lock.name = "recursive-lock-nesting"
        let state = LockProtectedState()
        // [0] the owner's thread index plus one, written at depth 1 and checked at every depth.
        let owner = SharedBuffer<Int>(count: 1, repeating: 0)
        let perThread = context.runThreads { worker -> Int in
            var sections = 0
            var reported = false
            let me = worker.index  // copied: `worker` is inout, busy inside operation {}
            while worker.keepRunning {
                let random = worker.random.next()
                let depth = Int(random & 3) + 1
                let problem: String? = worker.operation {
                    var problem: String? = nil
                    lock.lock()
                    if owner.base[0] != 0 {
                        problem = "thread \(me) took the lock while thread \(owner.base[0] - 1) owned it"
                    }
                    owner.base[0] = me + 1
                    for level in 1..<depth {
                        let how = (random >> (2 + 2 * UInt64(level))) & 3
                        let ok: Bool
                        switch how {
                        case 0: ok = lock.tryLock()
                        case 1: ok = lock.lock(before: .now - .seconds(1))
                        default: lock.lock(); ok = true
                        }
                        if !ok {
                            problem =
                                "the owner failed to re-enter at depth \(level + 1) (\(how == 0 ? "tryLock" : "lock(before:)"))"
                        }
                        if owner.base[0] != me + 1 { problem = "depth \(level + 1): owner slot \(owner.base[0] - 1)" }
                    }
                    if let section = state.criticalSection(thread: me) { problem = section }
                    for _ in 1..<depth { lock.unlock() }
                    if owner.base[0] != me + 1 {
                        problem = "another thread got in while thread \(me) still held the lock"
                    }
                    owner.base[0] = 0
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
