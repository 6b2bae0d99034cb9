// The run-once benchmarks: Interlock's Once, Lazy and AtomicLazyReference against the peers a
// Linux user would pick instead, all in one run.
//
// Workloads:
//   "Once done / 1 thread"              the call after initialisation: Once.run, Lazy.value,
//                                       pthread_once, a Swift lazy global (swift_once), an
//                                       Int? under Synchronization.Mutex
//   "Once cold race / 4 threads"        four threads (oversubscribing the 2 cores) call each of
//                                       1,000 fresh tokens in turn: one runs the body (a few
//                                       dozen multiply-adds), the others wait for it or find it
//                                       done (the tokens are made before the timed round; the
//                                       lazy global cannot be reset and sits this one out)
//   "Lazy reference done / 1 thread"    AtomicLazyReference.load() after the store, against
//                                       swift-atomics' ManagedAtomicLazyReference and the
//                                       standard library's Synchronization.AtomicLazyReference
//   "Lazy reference cold race / 4 threads"  `load() ?? storeIfNil(new)` on 1,000 fresh references
//
// One operation is one call (per thread for the done rows; per token for the cold races).
// Names: "<Workload> / <n> thread(s) / <Contender>" for ratios.py.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport

var onceConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 20, maxDuration: .milliseconds(1_000), maxIterations: 20_000)
}

/// Operations per iteration: equals the scaling factor (`.kilo`).
let operations = 1_000

/// Registers a benchmark over a team of `threads`; `prepare` runs untimed before each round.
func register(
    _ name: String, threads: Int, prepare: @escaping @Sendable () -> Void = {}, work: @escaping @Sendable (Int) -> Void
) {
    let team = ThreadTeam(threads: threads, work: work)
    Benchmark(
        name,
        configuration: onceConfiguration,
        closure: { benchmark in
            prepare()
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: { team.stop() }
    )
}

func registerOnce<C: OnceContender>(_: C.Type) {
    let done = C()
    done.call()
    register("Once done / 1 thread / \(C.contenderName)", threads: 1) { _ in
        for _ in 0..<operations { done.call() }
    }
    guard C.canRace else { return }
    let tokens = Tokens<C>()
    register(
        "Once cold race / 4 threads / \(C.contenderName)", threads: 4, prepare: { tokens.renew() },
        work: { _ in
            for token in tokens.current { token.call() }
        })
}

func registerLazyReference<C: LazyReferenceContender>(_: C.Type) {
    let done = C()
    _ = done.get()
    register("Lazy reference done / 1 thread / \(C.contenderName)", threads: 1) { _ in
        for _ in 0..<operations { blackHole(done.get()) }
    }
    let tokens = Tokens<C>()
    register(
        "Lazy reference cold race / 4 threads / \(C.contenderName)", threads: 4, prepare: { tokens.renew() },
        work: { _ in
            for token in tokens.current { blackHole(token.get()) }
        })
}

let benchmarks: @Sendable () -> Void = {
    registerOnce(InterlockOnce.self)
    registerOnce(InterlockLazy.self)
    registerOnce(PthreadOnce.self)
    registerOnce(SwiftLazyGlobal.self)
    registerOnce(MutexOptional.self)
    registerLazyReference(InterlockAtomicLazyReference.self)
    registerLazyReference(SwiftAtomicsLazyReference.self)
    registerLazyReference(StandardLibraryLazyReference.self)
}
