// The synchronized(object) benchmarks: Interlock's synchronized(_:_:) against what a Linux user
// writes by hand today — an NSRecursiveLock per object, kept in a dictionary under a lock — and
// one global NSRecursiveLock, all in one run.
//
// Workloads (the body adds one to a plain Int kept beside each object):
//   "synchronized one object / 1 thread"        uncontended
//   "synchronized nested twice / 1 thread"      synchronized(x) { synchronized(x) { ... } }
//   "synchronized 1,000 objects in turn / 1 thread"
//                                               one call on each of 1,000 objects, round and
//                                               round: a per-object lock is a line of its own
//                                               per object (the working set outgrows L1), one
//                                               global lock stays one hot line
//   "synchronized one object / 2 threads"       both threads on one object
//   "synchronized own object / 4 threads"       each thread on an object of its own (four
//                                               threads oversubscribe the 2 cores): per-object
//                                               locks do not contend, a global lock does
//
// One operation is one synchronized call (the nested row: one outer call). Teardown checks the
// counters. Names: "<Workload> / <n> thread(s) / <Contender>" for ratios.py.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport
import SynchronizedContenders

var synchronizedConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 20, maxDuration: .milliseconds(1_000), maxIterations: 20_000)
}

/// Operations per iteration, over all threads: equals the scaling factor (`.kilo`).
let operations = 1_000

/// Registers one team benchmark of this family (its configuration).
func register(
    _ name: String, threads: Int, work: @escaping @Sendable (Int) -> Void,
    check: @escaping @Sendable (Int) -> Void = { _ in }
) {
    registerTeamBenchmark(name, threads: threads, configuration: synchronizedConfiguration, work: work, check: check)
}

func registerSynchronized<C: SynchronizedContender>(_: C.Type) {
    let contender = C()
    let one = Guarded()
    register(
        "synchronized one object / 1 thread / \(C.contenderName)", threads: 1,
        work: { _ in
            for _ in 0..<operations { contender.synchronized(one) { one.count += 1 } }
        }, check: { rounds in precondition(one.count == rounds * operations, "\(C.contenderName): lost increments") })

    let nested = Guarded()
    register(
        "synchronized nested twice / 1 thread / \(C.contenderName)", threads: 1,
        work: { _ in
            for _ in 0..<operations {
                contender.synchronized(nested) { contender.synchronized(nested) { nested.count += 1 } }
            }
        }, check: { rounds in precondition(nested.count == rounds * operations, "\(C.contenderName): lost increments") }
    )

    let many = (0..<operations).map { _ in Guarded() }
    register(
        "synchronized 1,000 objects in turn / 1 thread / \(C.contenderName)", threads: 1,
        work: { _ in
            for i in 0..<operations {
                let object = many[i]
                contender.synchronized(object) { object.count += 1 }
            }
        },
        check: { rounds in
            precondition(
                many.reduce(0) { $0 + $1.count } == rounds * operations, "\(C.contenderName): lost increments")
        })

    let shared = Guarded()
    register(
        "synchronized one object / 2 threads / \(C.contenderName)", threads: 2,
        work: { _ in
            for _ in 0..<(operations / 2) { contender.synchronized(shared) { shared.count += 1 } }
        }, check: { rounds in precondition(shared.count == rounds * operations, "\(C.contenderName): lost increments") }
    )

    let own = (0..<4).map { _ in Guarded() }
    register(
        "synchronized own object / 4 threads / \(C.contenderName)", threads: 4,
        work: { index in
            let mine = own[index]
            for _ in 0..<(operations / 4) { contender.synchronized(mine) { mine.count += 1 } }
        },
        check: { rounds in
            precondition(own.allSatisfy { $0.count == rounds * operations / 4 }, "\(C.contenderName): lost increments")
        })
}

let benchmarks: @Sendable () -> Void = {
    registerSynchronized(InterlockSynchronized.self)
    registerSynchronized(DictionaryOfRecursiveLocks.self)
    registerSynchronized(GlobalRecursiveLock.self)
}
