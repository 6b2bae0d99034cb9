// The atomics benchmarks (issue 2): increment, CAS-loop increment, load and store on one Int64,
// from 1 thread and from 2 threads hammering the same word, for Interlock's AtomicInt64 and
// its peers (the C __atomic builtins, Synchronization.Atomic, swift-atomics' ManagedAtomic),
// all in the same run.
//
// Measurement: every iteration performs the workload's `scalingFactor` operations in total
// (1,000; a million for loads, which take a fraction of a nanosecond), split evenly over the
// threads (with 2 threads each does half, both started together by a ThreadTeam whose helper
// thread exists before the first iteration). The scaling factor is that count, so
// package-benchmark's scaled wall clock is the time per operation of the whole system (the
// inverse of the aggregate throughput). Contenders of one workload are registered next to each
// other so they run close together in time. After each benchmark, its teardown checks that the
// counter shows every increment that was timed.
//
// Names: "<Workload> / <n> thread(s) / <Contender>", the convention ratios.py groups on.

import Atomics
import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport
import Interlock

/// The benchmark configuration of one workload. Its scaling factor is the number of operations
/// each iteration performs over all threads (see `AtomicWorkload.scalingFactor`).
///
/// Iterations of 5–200 µs keep most samples free of preemption on a busy machine, so the
/// median is stable; the bounds keep the whole suite (32 benchmarks) under two minutes.
func atomicsConfiguration(for workload: AtomicWorkload) -> Benchmark.Configuration {
    Benchmark.Configuration.interlock(
        warmupIterations: 1_000, maxDuration: .milliseconds(1_500), maxIterations: 100_000,
        scalingFactor: workload.scalingFactor)
}

/// Registers one benchmark: `workload` on a counter made by `makeCounter` (holding zero, in
/// its own heap allocation), from `threads` threads.
func registerAtomicBenchmark<Counter: AtomicCounter>(
    _ makeCounter: () -> Counter, _ workload: AtomicWorkload, threads: Int
) {
    let operations = workload.scalingFactor.rawValue
    precondition(
        operations % threads == 0, "AtomicsBenchmarks: \(threads) threads do not split \(operations) operations evenly")
    let operationsPerThread = operations / threads
    // Created once, here; the closures hold it in a `let` capture for the whole run.
    let counter = makeCounter()
    let team = ThreadTeam(threads: threads) { _ in
        blackHole(workload.run(on: counter, operations: operationsPerThread))
    }
    let threadsLabel = threads == 1 ? "1 thread" : "\(threads) threads"
    Benchmark(
        "\(workload.name) / \(threadsLabel) / \(Counter.contenderName)",
        configuration: atomicsConfiguration(for: workload),
        closure: { benchmark in
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: {
            team.stop()
            workload.verify(counter, operations: team.completedRounds * operations)
        }
    )
}

let benchmarks: @Sendable () -> Void = {
    for workload in AtomicWorkload.allCases {
        for threads in [1, 2] {
            registerAtomicBenchmark({ AtomicInt64(0) }, workload, threads: threads)
            registerAtomicBenchmark({ CBuiltinCounter() }, workload, threads: threads)
            registerAtomicBenchmark({ SynchronizationCounter() }, workload, threads: threads)
            registerAtomicBenchmark({ ManagedAtomic<Int64>(0) }, workload, threads: threads)
        }
    }
}
