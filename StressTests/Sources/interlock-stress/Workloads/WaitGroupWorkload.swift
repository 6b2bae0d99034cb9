// Stress workload `wait-group-rounds`: thread 0 coordinates rounds of a reused WaitGroup; the
// other threads are the tasks.
//
// Each round, the coordinator enters one task per other thread (in one `enter(n)` or one by
// one, at random), registers a `notify` body in half the rounds (at random: a round without
// one starts the next cycle while the last leave of the previous one may still be waking the
// coordinator), publishes the round number, and waits — with
// `wait()` or with `wait(before:)` retried — while each task writes the round number into its
// own plain slot and leaves. After the wait the coordinator reads every slot.
//
// Invariants: a wait never returns before every task of its round has left (every slot holds
// the round number: a plain read, ordered only by the group); each round's notify body runs
// exactly once and sees every slot written too (the next round starts once it has run); a timed wait never reports a timeout before
// its deadline; the count is 0 between rounds.

import CStressSupport
import Interlock

extension Workload {
    /// `wait-group-rounds`; see the file comment.
    static let waitGroupRounds = Workload(
        name: "wait-group-rounds",
        summary: "WaitGroup: reused rounds of tasks; wait and notify never before the last leave; notify exactly once"
    ) { context in
        let tasks = Swift.max(1, context.threadCount - 1)
        let group = WaitGroup()
        let buffer = SharedBuffer<Int>(count: tasks, repeating: -1)
        nonisolated(unsafe) let slots = buffer.base
        let round = AtomicInt(-1)  // the round the tasks should run; published with release
        let stop = AtomicBool(false)
        let notified = AtomicInt(0)
        let notifyEarly = AtomicInt(0)
        let results = context.runThreads { worker -> (rounds: Int, early: Int, timedEarly: Int, registered: Int) in
            if worker.index == 0 || context.threadCount == 1 {
                var rounds = 0, early = 0, timedEarly = 0, registered = 0
                while worker.keepRunning {
                    let r = rounds
                    let oneCall = worker.random.next() & 1 == 0, timed = worker.random.next() & 1 == 0
                    let withNotify = worker.random.next() & 1 == 0
                    worker.operation {
                        if oneCall { group.enter(tasks) } else { for _ in 0..<tasks { group.enter() } }
                        if withNotify {
                            registered += 1
                            group.notify {
                                for i in 0..<tasks where slots[i] != r { _ = notifyEarly.increment() }
                                _ = notified.increment()
                            }
                        }
                        round.store(r)
                        if context.threadCount == 1 {
                            for i in 0..<tasks { slots[i] = r; group.leave() }
                        }
                        if !timed {
                            group.wait()
                        } else {
                            while true {
                                let deadline = ContinuousClock.now + .microseconds(200)
                                if group.wait(before: deadline) { break }
                                if ContinuousClock.now < deadline { timedEarly += 1 }
                            }
                        }
                        for i in 0..<tasks where slots[i] != r { early += 1 }
                        // The body runs on the last leaver's thread after the waiters are
                        // woken; the next round must not overwrite the slots it reads.
                        while notified.load() < registered { ilk_stress_thread_yield() }
                    }
                    if group.count != 0 { early += 1 }
                    rounds += 1
                }
                stop.store(true)
                return (rounds, early, timedEarly, registered)
            }
            let me = worker.index - 1
            var done = -1
            while !stop.load() {
                let r = round.load()
                if r == done { ilk_stress_thread_yield(); continue }
                slots[me] = r
                group.leave()
                done = r
            }
            return (0, 0, 0, 0)
        }
        withExtendedLifetime(buffer) {}
        let coordinator = results[0]
        context.check(
            coordinator.early == 0, "\(coordinator.early) waits returned before every task of their round had left")
        context.check(
            coordinator.timedEarly == 0,
            "\(coordinator.timedEarly) timed waits reported a timeout before their deadline")
        context.check(notifyEarly.load() == 0, "\(notifyEarly.load()) notify bodies ran before every task had left")
        context.check(
            notified.load() == coordinator.registered,
            "\(notified.load()) notify bodies ran for \(coordinator.registered) registered: each must run exactly once")
        context.check(coordinator.rounds > 0, "no round completed")
    }
}
