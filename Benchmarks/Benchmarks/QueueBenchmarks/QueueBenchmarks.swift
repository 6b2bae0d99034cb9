// The queue benchmarks (issue 5): Interlock's LockFreeQueue and LockFreeStack against C and
// C++ peers — liburcu's cds_lfq, cds_wfcq and cds_lfs, Boost.Lockfree's queue and stack,
// Concurrency Kit's ck_fifo_mpmc and ck_stack, and a pthread mutex around an array — on
// three workloads, for FIFO and LIFO, all in one run:
//   1P/1C          one producer, one consumer (2 threads)
//   2P/2C          two producers, two consumers (4 threads)
//   4 alternating  four threads, each putting then taking, over and over
//
// Measurement: every iteration transfers `transfersPerIteration` elements in total (put once,
// taken once), split over the threads of a ThreadTeam whose helpers exist before the first
// iteration and start together. The scaling factor equals that count, so package-benchmark's
// scaled wall clock is the time per transferred element of the whole system, and its
// throughput is transfers per second. Each iteration ends with the container empty.
// Consumers that find the container empty spin and yield every 64 attempts
// (Sources/QueueContenders/QueueContender.swift),
// the same for every contender. On a 2-core machine the 4-thread workloads are oversubscribed:
// that is part of what they measure (a lock-free design must not collapse when a thread is
// preempted).
//
// Validation: the values put in a round are 1...transfersPerIteration; the threads add up what
// they took, and every iteration checks the total (a lost or duplicated element traps, naming
// the benchmark), at the cost of one relaxed atomic add per thread per thousand transfers.
//
// Names: "<Workload> / <n> threads / <Contender>", the convention ratios.py groups on.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport
import Interlock
import QueueContenders
import Synchronization

/// Elements transferred per measured iteration, over all threads; equals the scaling factor.
let transfersPerIteration = BenchmarkScalingFactor.kilo.rawValue

/// Iterations of a few hundred microseconds; bounded so that the 30 benchmarks of this
/// target take about a minute.
var queueConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 100, maxDuration: .seconds(2), maxIterations: 20_000)
}

/// Registers `workload` on a container made by `makeQueue`, with the workload's thread count.
func registerQueueBenchmark<Queue: QueueContender>(_ makeQueue: () -> Queue, _ workload: QueueWorkload) {
    precondition(transfersPerIteration % 4 == 0, "QueueBenchmarks: transfers must split over 4 threads")
    // Created once, here; the closures hold it in a `let` capture for the whole run.
    let queue = makeQueue()
    let name = "\(workload.name(Queue.discipline)) / \(workload.threads) threads / \(Queue.contenderName)"
    let taken = Atomic<UInt>(0)
    let team = ThreadTeam(threads: workload.threads) { index in
        let sum = workload.run(on: queue, thread: index, transfers: transfersPerIteration)
        // Relaxed: read by the caller after ThreadTeam.round() returns, which acquires every
        // helper's release of its finished count.
        taken.add(sum, ordering: .relaxed)
    }
    // The values put in one round are 1...transfersPerIteration, each taken exactly once.
    let expectedSum = UInt(transfersPerIteration * (transfersPerIteration + 1) / 2)
    Benchmark(
        name,
        configuration: queueConfiguration,
        closure: { benchmark in
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
            // One load per round of a thousand transfers: proves no element was lost or
            // duplicated, for every contender alike.
            let sum = taken.exchange(0, ordering: .relaxed)  // relaxed: see above
            precondition(
                sum == expectedSum,
                "\(name): the values taken sum to \(sum), not \(expectedSum): an element was lost or duplicated")
        },
        setup: { team.start() },
        teardown: { team.stop() }
    )
}

let benchmarks: @Sendable () -> Void = {
    // Contenders of one workload next to each other, so they run close together in time.
    for workload in QueueWorkload.allCases {
        registerQueueBenchmark({ LockFreeQueue<UInt>() }, workload)
        registerQueueBenchmark({ URCULockFreeQueue() }, workload)
        registerQueueBenchmark({ URCUWaitFreeQueue() }, workload)
        registerQueueBenchmark({ BoostQueue() }, workload)
        registerQueueBenchmark({ CKFifoMPMC() }, workload)
        registerQueueBenchmark({ MutexRingQueue() }, workload)
    }
    for workload in QueueWorkload.allCases {
        registerQueueBenchmark({ LockFreeStack<UInt>() }, workload)
        registerQueueBenchmark({ URCULockFreeStack() }, workload)
        registerQueueBenchmark({ BoostStack() }, workload)
        registerQueueBenchmark({ CKStack() }, workload)
        registerQueueBenchmark({ MutexArrayStack() }, workload)
    }
}
