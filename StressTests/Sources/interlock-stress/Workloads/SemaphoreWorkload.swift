// Stress workloads of Semaphore.
//
// `semaphore-pool`: a pool of `units` (2, or fewer than the threads) shared by every thread,
// taken through each entry point at random — `wait()` (5 in 8), `tryWait()` retried with a
// yield (1 in 8), and `wait(before:)` 50 us ahead (2 in 8, withdrawing on timeout) — held for
// a few pauses, then signalled back.
// Invariants: never more holders than units at once; a timed wait never reports a timeout
// before its deadline; at the end every unit is back (value == units) and no waiter is left
// queued: no unit lost or made, whatever the timed waiters' withdrawals raced with.
//
// `semaphore-producer-consumer`: half the threads signal a semaphore that starts at 0, counting
// each signal; the others take units with `wait(before:)` 1 ms ahead, counting each success.
// Invariants: every signal is consumed or still free (signals == taken + value at the end), and
// no consumer ever took more units than had been signalled.

import CStressSupport
import Interlock

extension Workload {
    /// `semaphore-pool`; see the file comment.
    static let semaphorePool = Workload(
        name: "semaphore-pool",
        summary: "Semaphore: a pool of units via wait/tryWait/wait(before:); holders <= units, no unit lost or made"
    ) { context in
        let units = Swift.max(1, Swift.min(2, context.threadCount - 1))
        let semaphore = Interlock.Semaphore(value: units)
        let holders = AtomicInt(0)
        let counts = context.runThreads { worker -> (taken: Int, overfull: Int, early: Int) in
            var taken = 0, overfull = 0, early = 0
            while worker.keepRunning {
                let choice = worker.random.next() & 7
                let got: Bool = worker.operation {
                    switch choice {
                    case 0:
                        while !semaphore.tryWait() { ilk_stress_thread_yield() }
                        return true
                    case 1, 2:
                        let deadline = ContinuousClock.now + .microseconds(50)
                        if semaphore.wait(before: deadline) { return true }
                        if ContinuousClock.now < deadline { early += 1 }
                        return false
                    default:
                        semaphore.wait()
                        return true
                    }
                }
                guard got else { continue }
                if holders.increment() > units { overfull += 1 }
                for _ in 0..<(worker.random.next() & 15) { ilk_stress_spin_pause() }
                _ = holders.decrement()
                semaphore.signal()
                taken += 1
            }
            return (taken, overfull, early)
        }
        let overfull = counts.reduce(0) { $0 + $1.overfull }
        let early = counts.reduce(0) { $0 + $1.early }
        context.check(overfull == 0, "\(overfull) times more than \(units) threads held a unit at once")
        context.check(early == 0, "\(early) timed waits reported a timeout before their deadline")
        context.check(semaphore.value == units, "value ended at \(semaphore.value), not \(units): units lost or made")
        context.check(counts.reduce(0) { $0 + $1.taken } > 0, "no unit was ever taken")
    }

    /// `semaphore-producer-consumer`; see the file comment.
    static let semaphoreProducerConsumer = Workload(
        name: "semaphore-producer-consumer",
        summary: "Semaphore: producers signal, consumers wait(before:); every signal consumed or still free"
    ) { context in
        let semaphore = Interlock.Semaphore(value: 0)
        let signalled = AtomicInt(0)
        let consumed = AtomicInt(0)
        let producers = Swift.max(1, context.threadCount / 2)
        let counts = context.runThreads { worker -> (signals: Int, taken: Int, overdrawn: Int) in
            var signals = 0, taken = 0, overdrawn = 0
            let producing = worker.index < producers || context.threadCount == 1
            while worker.keepRunning {
                if producing && (context.threadCount > 1 || worker.random.next() & 1 == 0) {
                    worker.operation {
                        // Counted before the signal: a consumer's count can never overtake it.
                        _ = signalled.increment()
                        semaphore.signal()
                    }
                    signals += 1
                    if worker.random.next() & 3 == 0 { ilk_stress_thread_yield() }
                } else {
                    let got = worker.operation { semaphore.wait(before: .now + .milliseconds(1)) }
                    if got {
                        taken += 1
                        if consumed.increment() > signalled.load() { overdrawn += 1 }
                    }
                }
            }
            return (signals, taken, overdrawn)
        }
        let signals = counts.reduce(0) { $0 + $1.signals }
        let taken = counts.reduce(0) { $0 + $1.taken }
        let overdrawn = counts.reduce(0) { $0 + $1.overdrawn }
        context.check(overdrawn == 0, "\(overdrawn) units were taken before they had been signalled")
        context.check(
            signals == taken + semaphore.value,
            "\(signals) signals, \(taken) taken, \(semaphore.value) free: units lost or made")
    }
}
