// Stress workload `atomic-bool-handoff`: one AtomicBool used as a test-and-set lock that the
// threads hand to each other, guarding plain (non-atomic) memory.
//
// Protocol: a thread takes the flag from false to true (even threads with `exchange(true)`,
// odd threads with `compareExchange(false, true)`), both with acquire ordering; inside, it
// writes its index into a plain `owner` word and bumps a plain counter four times, re-reading
// both after each step (ck's lock validator does the same); it checks that `owner` still holds
// its index and the counter its last value, then hands the flag back with a release store of
// false. While the
// flag is taken it waits on relaxed loads (yielding the CPU: the holder may be descheduled on
// a machine with fewer cores than threads), and gives up once the run is over, so that a flag
// left taken by a broken exchange fails the final check instead of hanging the run.
//
// Invariants:
// - mutual exclusion: `owner` is never overwritten by another thread while one holds the flag;
// - the plain counter equals the number of hand-offs (an exchange that is not atomic lets two
//   threads in at once, and their plain increments collide);
// - the acquire/release pair orders the plain accesses, so ThreadSanitizer reports a race if
//   either ordering is too weak or the exchange is not atomic.

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Workload {
    /// `atomic-bool-handoff`; see the file comment.
    static let atomicBoolHandoff = Workload(
        name: "atomic-bool-handoff",
        summary: "AtomicBool exchange/compareExchange as a lock over plain memory; exclusive, exact count"
    ) { context in
        let taken = AtomicBool(false)
        let shared = SharedBuffer<Int>(count: 2, repeating: 0)  // [0]: counter, [1]: owner
        let bumpsPerEntry = 4
        let handoffs = context.runThreads { worker -> Int in
            let counter = shared.base, owner = shared.base + 1
            let me = worker.index
            let useExchange = me & 1 == 0
            var entries = 0
            var reported = false
            while worker.keepRunning {
                let entered = worker.operation { () -> Bool in
                    var spins = 0
                    while useExchange
                        ? taken.exchange(true, ordering: .acquire)
                        : !taken.compareExchange(expected: false, desired: true, ordering: .acquire).exchanged
                    {
                        // Relaxed: only a hint that the flag may be free; the acquiring RMW
                        // above is what synchronizes with the holder's release.
                        while taken.load(ordering: .relaxed) {
                            spins += 1
                            if spins & 15 == 0 {
                                // A flag left taken (a broken exchange) must not hang the run.
                                if context.isStopped { return false }
                                sched_yield()
                            }
                        }
                    }
                    // The critical section: claim `owner`, bump the counter a few times and
                    // re-read both after each step. compilerBarrier() makes every step a real
                    // memory access (the compiler may not forward the stored value), and the
                    // several steps widen the window in which an intruder is seen.
                    owner.pointee = me
                    var stillMine = true
                    for _ in 0..<bumpsPerEntry {
                        let before = counter.pointee
                        compilerBarrier()
                        counter.pointee = before + 1
                        compilerBarrier()
                        stillMine = stillMine && owner.pointee == me && counter.pointee == before + 1
                    }
                    // Release pairs with the acquiring exchange/compareExchange of the next holder.
                    taken.store(false, ordering: .release)
                    if !stillMine && !reported {
                        reported = true
                        context.fail("thread \(me): another thread entered while it held the flag")
                    }
                    return true
                }
                if entered { entries += 1 }
            }
            return entries
        }
        let expected = handoffs.reduce(0, +) * bumpsPerEntry
        context.check(!taken.load(), "the flag is still taken after every thread finished")
        context.check(
            shared.base.pointee == expected,
            "plain counter reads \(shared.base.pointee), expected \(expected) (\(bumpsPerEntry) per hand-off): entries overlapped"
        )
    }
}
