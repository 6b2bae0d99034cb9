// Stress workload `condition-lock-token-ring`: a token passed around a ring of threads with a
// ConditionLock — thread i takes the lock when the condition is i and unlocks it with i + 1
// (mod the thread count), the NSConditionLock hand-off pattern.
//
// Every thread but the token's next owner waits for a condition value of its own, so each
// unlock must wake exactly the right thread among many waiting for other values. Hand-offs
// use `lock(whenCondition:before:)` (bounded, for the watchdog) and, one turn in eight, a
// polling `tryLock(whenCondition:)`; the untimed `lock(whenCondition:)` shares its waiting
// code with the timed form and is covered by the unit tests.
//
// Stopping: the thread that holds the token when the deadline has passed sets a plain
// `stopping` flag (under the lock) and passes the token on; each thread that receives the
// token with `stopping` set passes it on once more and exits, so every thread gets one last
// turn and none is left waiting.
//
// Watchdog: every wait is bounded (`stall` ahead). A waiter that sees no hand-off for that
// long reports a stall (a lost wake-up) and raises `abandoned`, and every thread then exits
// at its next timeout: the run fails instead of hanging.
//
// Invariants checked:
//   - hand-off order: the holder finds in the plain `last` word the index of its predecessor
//     in the ring, and writes its own (a wrong wake or a broken mutex breaks the order);
//   - the plain hand-off counter equals the sum of the threads' turns (exclusion);
//   - no stall (the watchdog above).

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Workload {
    /// `condition-lock-token-ring`; see the file comment.
    static let conditionLockTokenRing = Workload(
        name: "condition-lock-token-ring",
        summary: "ConditionLock token ring i -> i+1; exact hand-off order, exclusion, no stall",
        latencySampleInterval: 1
    ) { context in
        let ring = context.threadCount
        let stall = Duration.seconds(5)
        let token = ConditionLock(condition: 0)
        token.name = "condition-lock-token-ring"
        // [0] last holder (starts as the predecessor of 0), [1] hand-offs, [2] stopping flag.
        let shared = SharedBuffer<Int>(count: 3, repeating: 0)
        shared.base[0] = ring - 1
        let abandoned = AtomicBool(false)

        let turns = context.runThreads { worker -> Int in
            let last = shared.base, handoffs = shared.base + 1, stopping = shared.base + 2
            let me = worker.index
            let predecessor = (me + ring - 1) % ring
            let successor = (me + 1) % ring
            var mine = 0
            while true {
                // Take the token: mostly the plain blocking form, sometimes timed or try.
                let acquired: Bool
                switch mine % 8 {
                case 5:
                    var got = false
                    let giveUp = ContinuousClock.now + stall
                    while !got && ContinuousClock.now < giveUp && !abandoned.load(ordering: .relaxed) {
                        got = token.tryLock(whenCondition: me)
                        if !got { sched_yield() }
                    }
                    acquired = got
                default:
                    acquired = token.lock(whenCondition: me, before: .now + stall)
                }
                if !acquired {
                    // Relaxed: a flag that only ends the loops; nothing is published through it.
                    if abandoned.load(ordering: .relaxed) { return mine }
                    context.fail(
                        "thread \(me): no hand-off for \(stall) (lost wake-up); condition is \(token.condition)")
                    abandoned.store(true, ordering: .relaxed)
                    return mine
                }
                worker.operation {
                    if last.pointee != predecessor {
                        context.fail("thread \(me) got the token from \(last.pointee), not from \(predecessor)")
                    }
                    last.pointee = me
                    handoffs.pointee += 1
                }
                mine += 1
                let wasStopping = stopping.pointee != 0
                if !wasStopping && !worker.keepRunning { stopping.pointee = 1 }
                token.unlock(withCondition: successor)
                if wasStopping { return mine }
            }
        }
        let total = turns.reduce(0, +)
        context.check(
            shared.base[1] == total,
            "plain hand-off counter reads \(shared.base[1]) after \(total) turns: turns overlapped")
        if !abandoned.load() {
            context.check(token.tryLock(), "the condition lock is still held after the run")
            token.unlock()
        }
    }
}
