// Stress workload of Semaphore's async waits: `semaphore-threads-and-tasks`.
//
// A pool of `units` (2, or fewer than the threads) shared by threads and tasks at once. Half the
// worker threads (at least one) take units with the blocking `wait()` or `wait(before:)` 50 us
// ahead; the others drive tasks: each operation starts a batch of 8 tasks that take a unit with
// `try await wait()` (or `wait(before:)` 100 us ahead, 1 in 4), hold it for a few pauses and
// a yield, and signal it back; the driver cancels a random half of the batch after a random
// number of yields, then waits for the batch (a WaitGroup). A task whose wait threw holds
// nothing; it counts the cancellation.
// Invariants: never more holders than units at once; no timed wait reports a timeout before its
// deadline; a cancelled wait never leaves its task holding a unit (it would show as a signal
// without a wait: the final value would exceed `units`); at the end every unit is back (value ==
// units): no unit lost to a cancellation racing a signal, none made.

import CStressSupport
import Interlock

extension Workload {
    /// `semaphore-threads-and-tasks`; see the file comment.
    static let semaphoreThreadsAndTasks = Workload(
        name: "semaphore-threads-and-tasks",
        summary:
            "Semaphore: threads and tasks share a pool, tasks cancelled at random; holders <= units, units conserved",
        latencySampleInterval: 1
    ) { context in
        let units = Swift.max(1, Swift.min(2, context.threadCount - 1))
        let semaphore = Interlock.Semaphore(value: units)
        let holders = AtomicInt(0)
        let overfull = AtomicInt(0)
        let early = AtomicInt(0)
        let taskTaken = AtomicInt(0)
        let taskCancelled = AtomicInt(0)
        let drivers = Swift.max(1, context.threadCount / 2)

        /// Holds a unit for a moment, checking the bound; returns it.
        @Sendable func hold(_ pauses: UInt64) {
            if holders.increment() > units { _ = overfull.increment() }
            for _ in 0..<pauses { ilk_stress_spin_pause() }
            _ = holders.decrement()
        }

        let counts = context.runThreads { worker -> Int in
            var threadTaken = 0
            let driving = worker.index < drivers
            while worker.keepRunning {
                if driving {
                    worker.operation {
                        let batch = WaitGroup()
                        batch.enter(8)
                        var tasks: [Task<Void, Never>] = []
                        for _ in 0..<8 {
                            let timed = worker.random.next() & 3 == 0
                            let pauses = worker.random.next() & 15
                            tasks.append(
                                Task {
                                    defer { batch.leave() }
                                    do {
                                        if timed {
                                            let deadline = ContinuousClock.now + .microseconds(100)
                                            guard try await semaphore.wait(before: deadline) else {
                                                if ContinuousClock.now < deadline { _ = early.increment() }
                                                return
                                            }
                                        } else {
                                            try await semaphore.wait()
                                        }
                                    } catch {
                                        _ = taskCancelled.increment()
                                        return
                                    }
                                    hold(pauses)
                                    await Task.yield()
                                    semaphore.signal()
                                    _ = taskTaken.increment()
                                })
                        }
                        for task in tasks where worker.random.next() & 1 == 0 {
                            for _ in 0..<(worker.random.next() & 7) { ilk_stress_thread_yield() }
                            task.cancel()
                        }
                        batch.wait()
                    }
                } else {
                    let got: Bool = worker.operation {
                        if worker.random.next() & 3 == 0 {
                            let deadline = ContinuousClock.now + .microseconds(50)
                            if semaphore.wait(before: deadline) { return true }
                            if ContinuousClock.now < deadline { _ = early.increment() }
                            return false
                        }
                        semaphore.wait()
                        return true
                    }
                    guard got else { continue }
                    hold(worker.random.next() & 15)
                    semaphore.signal()
                    threadTaken += 1
                }
            }
            return threadTaken
        }
        context.check(overfull.load() == 0, "\(overfull.load()) times more than \(units) holders at once")
        context.check(early.load() == 0, "\(early.load()) timed waits reported a timeout before their deadline")
        context.check(
            semaphore.value == units, "value ended at \(semaphore.value), not \(units): units lost or made")
        context.check(taskTaken.load() > 0, "no task ever took a unit")
        if context.threadCount > 1 {
            context.check(counts.reduce(0, +) > 0, "no thread ever took a unit")
        }
        context.note("task units", taskTaken.load())
        context.note("task waits cancelled", taskCancelled.load())
    }
}
