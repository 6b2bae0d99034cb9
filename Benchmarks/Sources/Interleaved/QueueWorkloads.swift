// The queue workloads of the interleaved runner: QueueBenchmarks' rows on the same contenders and
// thread code (Sources/QueueContenders), as interleaved rounds. A run transfers 10 times
// `--operations` elements (a million by default, 20-90 ms): several time slices, so that a
// contender's figure is not the phase of the scheduler its 1,000-element iterations drew (the
// quantized rows of Benchmarks/README.md, "Every family under load"). One operation: one
// element put once and taken once. The check after each run: the values taken add up to those
// put (a lost or duplicated element stops the run).

import BenchmarkSupport
import Interlock
import QueueContenders

/// The queue workloads, in QueueBenchmarks' order: FIFO, then LIFO, each workload in turn.
func queueWorkloads() -> [Workload] {
    let fifo = QueueWorkload.allCases.map { workload in
        queueWorkload(
            workload, .fifo,
            [
                queueContender(LockFreeQueue<UInt>.self, isInterlock: true, workload),
                queueContender(URCULockFreeQueue.self, workload),
                queueContender(URCUWaitFreeQueue.self, workload),
                queueContender(BoostQueue.self, workload),
                queueContender(CKFifoMPMC.self, workload),
                queueContender(MutexRingQueue.self, workload),
            ])
    }
    let lifo = QueueWorkload.allCases.map { workload in
        queueWorkload(
            workload, .lifo,
            [
                queueContender(LockFreeStack<UInt>.self, isInterlock: true, workload),
                queueContender(URCULockFreeStack.self, workload),
                queueContender(BoostStack.self, workload),
                queueContender(CKStack.self, workload),
                queueContender(MutexArrayStack.self, workload),
            ])
    }
    return fifo + lifo
}

private func queueWorkload(_ workload: QueueWorkload, _ discipline: QueueDiscipline, _ contenders: [Contender])
    -> Workload
{
    Workload(
        name: "\(workload.name(discipline)) / \(workload.threads) threads", threads: workload.threads, scale: 10,
        contenders: contenders)
}

private func queueContender<Queue: QueueContender>(
    _ type: Queue.Type, isInterlock: Bool = false, _ workload: QueueWorkload
) -> Contender {
    Contender(name: type.contenderName, isInterlock: isInterlock) { operations in
        // Whole shares for every thread (the 4-thread workloads split the transfers in four).
        let transfers = operations / 4 * 4
        let queue = type.init()
        let taken = AtomicInt(0)
        let team = ThreadTeam(threads: workload.threads, idleNaps: true) { index in
            let sum = workload.run(on: queue, thread: index, transfers: transfers)
            // Relaxed: read after the round's join (ThreadTeam.round() acquires every helper's
            // finish).
            _ = taken.add(Int(bitPattern: sum), ordering: .relaxed)
        }
        return Run(team: team) {
            precondition(
                taken.exchange(0, ordering: .relaxed) == transfers * (transfers + 1) / 2,
                "Interleaved: \(type.contenderName) lost or duplicated elements")
            precondition(queue.take() == nil, "Interleaved: \(type.contenderName) kept an element")
            // Untimed: the nodes a liburcu peer handed to call_rcu are freed now, not during
            // the next contender's run.
            queue.drain()
        }
    }
}
