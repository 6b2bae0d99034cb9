// Stress workload `compat-locks`: InterlockCompat's three Darwin locks, each guarding its own
// ck validator state (LockWorkloadSupport.swift), loaded from every thread at once.
//
// Each section picks, at random, a lock and an entry point:
//   - os_unfair_lock: `os_unfair_lock_lock` (3 in 4) or `os_unfair_lock_trylock` retried with
//     a yield (1 in 4); inside, `os_unfair_lock_assert_owner` must hold, and outside,
//     `os_unfair_lock_assert_not_owner` (either traps the harness when it misfires);
//   - OSAllocatedUnfairLock<Int>: `withLock` (3 in 4) or `withLockIfAvailable` retried with a
//     yield (1 in 4), counting its sections in the lock's own state as well;
//   - OSSpinLock: `OSSpinLockLock` (3 in 4) or `OSSpinLockTry` retried with a yield (1 in 4).
//
// Invariants checked:
//   - mutual exclusion per lock: the ck counter reads 0, 10, 0 and nobody else is inside;
//   - no lost section: each lock's plain count equals the sections the workers ran under it,
//     and OSAllocatedUnfairLock's own state agrees;
//   - every lock is free at the end (trylock succeeds from the main thread).

import CStressSupport
import InterlockCompat

/// The three locks, at stable addresses for the pointer-taking C-style functions.
private final class CompatLocks: @unchecked Sendable {
    let unfair = UnsafeMutablePointer<os_unfair_lock>.allocate(capacity: 1)
    let spin = UnsafeMutablePointer<OSSpinLock>.allocate(capacity: 1)
    let allocated = OSAllocatedUnfairLock(initialState: 0)

    init() {
        unfair.initialize(to: os_unfair_lock())
        spin.initialize(to: OS_SPINLOCK_INIT)
    }

    deinit {
        unfair.deallocate()
        spin.deallocate()
    }
}

extension Workload {
    /// `compat-locks`; see the file comment.
    static let compatLocks = Workload(
        name: "compat-locks",
        summary: "os_unfair_lock, OSAllocatedUnfairLock, OSSpinLock: ck validator sections; exclusion, exact counts"
    ) { context in
        let locks = CompatLocks()
        let states = [LockProtectedState(), LockProtectedState(), LockProtectedState()]
        let perThread = context.runThreads { worker -> [Int] in
            var sections = [0, 0, 0]
            var reported = false
            let me = worker.index  // copied: `worker` is inout, busy inside operation {}
            while worker.keepRunning {
                let choice = worker.random.next()
                let which = Int(choice % 3)
                let tryForm = (choice >> 8) & 3 == 0
                let state = states[which]
                let problem: String? = worker.operation {
                    switch which {
                    case 0:
                        if tryForm {
                            while !os_unfair_lock_trylock(locks.unfair) { ilk_stress_thread_yield() }
                        } else {
                            os_unfair_lock_lock(locks.unfair)
                        }
                        os_unfair_lock_assert_owner(locks.unfair)
                        let problem = state.criticalSection(thread: me)
                        os_unfair_lock_unlock(locks.unfair)
                        os_unfair_lock_assert_not_owner(locks.unfair)
                        return problem
                    case 1:
                        let section: @Sendable (inout Int) -> String? = { count in
                            count += 1
                            return state.criticalSection(thread: me)
                        }
                        if tryForm {
                            while true {
                                if let problem = locks.allocated.withLockIfAvailable(section) { return problem }
                                ilk_stress_thread_yield()
                            }
                        }
                        return locks.allocated.withLock(section)
                    default:
                        if tryForm {
                            while !OSSpinLockTry(locks.spin) { ilk_stress_thread_yield() }
                        } else {
                            OSSpinLockLock(locks.spin)
                        }
                        let problem = state.criticalSection(thread: me)
                        OSSpinLockUnlock(locks.spin)
                        return problem
                    }
                }
                sections[which] += 1
                if let problem, !reported {
                    reported = true
                    context.fail(problem)
                }
            }
            return sections
        }
        let names = ["os_unfair_lock", "OSAllocatedUnfairLock", "OSSpinLock"]
        for (index, name) in names.enumerated() {
            let expected = perThread.reduce(0) { $0 + $1[index] }
            context.check(
                states[index].sections == expected,
                "\(name): \(states[index].sections) sections recorded under the lock, \(expected) run: updates lost")
            context.check(
                states[index].counter == 0, "\(name): the ck counter ended at \(states[index].counter), not 0")
            context.note(name, expected)
        }
        let allocatedCount = locks.allocated.withLock { $0 }
        context.check(
            allocatedCount == states[1].sections,
            "OSAllocatedUnfairLock: its state counted \(allocatedCount) sections, the plain count \(states[1].sections)"
        )
        context.check(os_unfair_lock_trylock(locks.unfair), "os_unfair_lock: still held after every worker returned")
        os_unfair_lock_unlock(locks.unfair)
        context.check(OSSpinLockTry(locks.spin), "OSSpinLock: still held after every worker returned")
        OSSpinLockUnlock(locks.spin)
    }
}
