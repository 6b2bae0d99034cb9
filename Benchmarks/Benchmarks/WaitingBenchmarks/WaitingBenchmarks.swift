// The semaphore and group benchmarks: Interlock's Semaphore and WaitGroup against the peers a
// Linux user would pick instead (Dispatch's DispatchSemaphore and DispatchGroup, POSIX sem_t),
// all in one run.
//
// Workloads:
//   "Semaphore wait+signal / 1 thread"    uncontended: wait, signal on a semaphore of value 1
//   "Semaphore hand-off / 2 threads"      a producer and a consumer pass items through two
//                                         semaphores (items from 0, spaces from 1): one
//                                         operation = one item handed over
//   "Semaphore pool of 2 / 4 threads"     four threads (oversubscribing the 2 cores) take and
//                                         return units of a semaphore of value 2, a few dozen
//                                         multiply-adds of work while holding one
//   "Semaphore pool of 2, atomic          the same with almost no work while holding: one atomic
//    increment / 4 threads"               increment of a shared counter (an independent run found
//                                         Interlock 2.18x DispatchSemaphore on this one, issue 32)
//   "WaitGroup enter+leave / 1 thread"    uncontended enter, leave
//   "WaitGroup fork-join / 4 threads"     thread 0 enters 3 tasks, releases threads 1-3 (a
//                                         generation word), each leaves, thread 0 waits: one
//                                         operation = one fork-join (the release is the same
//                                         code for every contender)
//
// Measurement: as LocksBenchmarks (a ThreadTeam per benchmark, an iteration of `operations`
// operations over all threads, scaling factor = operations, so the scaled wall clock is the
// time per operation). Names: "<Workload> / <n> thread(s) / <Contender>" for ratios.py.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport
import Interlock
import WaitingContenders

var waitingConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 20, maxDuration: .milliseconds(1_000), maxIterations: 20_000)
}

func threadsLabel(_ threads: Int) -> String { threads == 1 ? "1 thread" : "\(threads) threads" }

/// Registers one team benchmark of this family (its configuration).
func register(
    _ name: String, threads: Int, work: @escaping @Sendable (Int) -> Void,
    check: @escaping @Sendable (Int) -> Void = { _ in }
) {
    registerTeamBenchmark(name, threads: threads, configuration: waitingConfiguration, work: work, check: check)
}

/// Operations per iteration: equals the scaling factor (`.kilo`).
let operations = 1_000

func registerSemaphore<S: SemaphoreContender>(_: S.Type) {
    let single = S(value: 1)
    register(
        "Semaphore wait+signal / 1 thread / \(S.contenderName)", threads: 1,
        work: { _ in
            for _ in 0..<operations { single.wait(); single.signal() }
        }, check: { _ in precondition(single.tryTake(), "WaitingBenchmarks: \(S.contenderName) lost its unit") })

    let items = S(value: 0), spaces = S(value: 1)
    register(
        "Semaphore hand-off / 2 threads / \(S.contenderName)", threads: 2,
        work: { index in
            if index == 0 {
                for _ in 0..<operations { spaces.wait(); items.signal() }
            } else {
                for _ in 0..<operations { items.wait(); spaces.signal() }
            }
        })

    let tightPool = S(value: 2)
    let increments = AtomicInt(0)
    register(
        "Semaphore pool of 2, atomic increment / 4 threads / \(S.contenderName)", threads: 4,
        work: { _ in
            for _ in 0..<(operations / 4) {
                tightPool.wait()
                _ = increments.increment(ordering: .relaxed)  // Relaxed: a count, checked at the end.
                tightPool.signal()
            }
        },
        check: { rounds in
            precondition(
                increments.load(ordering: .relaxed) == rounds * operations,
                "WaitingBenchmarks: \(S.contenderName) lost increments")
            precondition(
                tightPool.tryTake() && tightPool.tryTake() && !tightPool.tryTake(),
                "WaitingBenchmarks: \(S.contenderName) pool lost or made units")
        })

    let pool = S(value: 2)
    let share = operations / 4
    register(
        "Semaphore pool of 2 / 4 threads / \(S.contenderName)", threads: 4,
        work: { _ in
            var sink = 0
            for i in 0..<share {
                pool.wait()
                sink &+= holderWork(i)
                pool.signal()
            }
            precondition(sink != 1, "unreachable: keeps the work alive")
        },
        check: { _ in
            precondition(
                pool.tryTake() && pool.tryTake() && !pool.tryTake(),
                "WaitingBenchmarks: \(S.contenderName) pool lost or made units")
        })
}

func registerGroup<G: GroupContender>(_: G.Type) {
    let single = G()
    register(
        "WaitGroup enter+leave / 1 thread / \(G.contenderName)", threads: 1,
        work: { _ in
            for _ in 0..<operations { single.enter(); single.leave() }
        })

    let forkJoin = ForkJoin<G>()
    register(
        "WaitGroup fork-join / 4 threads / \(G.contenderName)", threads: 4,
        work: { index in forkJoin.run(index, operations: operations) })
}

let benchmarks: @Sendable () -> Void = {
    registerSemaphore(InterlockSemaphore.self)
    registerSemaphore(DispatchSemaphoreContender.self)
    registerSemaphore(POSIXSemaphore.self)
    registerGroup(InterlockWaitGroup.self)
    registerGroup(DispatchGroupContender.self)
}
