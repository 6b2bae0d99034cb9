// The lock benchmarks (issue 3): Interlock's Lock, SpinLock, RecursiveLock and ReadWriteLock
// against their peers, all in one run.
//
// Workloads (the critical section always adds one to a plain Int, or reads it):
//   "<Kind> lock+unlock / 1 thread"       uncontended: one thread, lock, add, unlock
//   "<Kind> shared counter / N threads"   N threads (2; 4 oversubscribes the 2-core machine)
//                                         each do their share of lock, add, unlock on ONE lock
//   "ReadWriteLock read lock+unlock / 1 thread", "... write lock+unlock / 1 thread"
//   "ReadWriteLock 95% reads / N threads" every 20th operation of each thread writes (adds one
//                                         under the write lock), the rest read under the read lock
// where <Kind> is Mutex (Lock, and InterlockCompat's os_unfair_lock and OSAllocatedUnfairLock
// over the same kind of futex lock, vs pthread default and adaptive, NSLock,
// Synchronization.Mutex, NIOLock; in the "value inline" groups InterlockCompat's
// OSAllocatedUnfairLock<Int> and Locked<Int> vs Mutex<Int>, NIOLockedValueBox<Int> and a
// pthread mutex with its Int in one block), SpinLock (and
// InterlockCompat's OSSpinLock, vs pthread spinlock, Concurrency Kit's
// fetch-and-store and ticket spin locks) or RecursiveLock (vs pthread recursive, NSRecursiveLock); ReadWriteLock and
// ReadWriteLocked<Int> are compared
// with pthread rwlock (default and prefer-writer) and Concurrency Kit's ck_rwlock. CK's locks
// never sleep: in the 4-thread groups a waiter burns its core while the holder is preempted.
//
// Measurement: an iteration performs 1,000 operations over all its threads (a ThreadTeam starts
// them together; helpers exist before the first iteration); the scaling factor is 1,000, so the
// scaled wall clock is the time per operation of the whole system. Teardown checks that the
// counter holds exactly the increments that were timed.
//
// Oversubscribed groups (4 threads on the 2 cores) run long rounds instead: a million
// operations per iteration (scaling factor a million), 6-30 ms, several scheduler time slices.
// A round of 1,000 operations (5-20 us) is shorter than a time slice, so it measured mostly two
// running threads and the placement the scheduler happened to choose (two and two, or three and
// one: 9 against 13.5 us for the same round in a C replica), not what oversubscription costs a
// lock: a holder preempted inside its critical section while its waiters spin, yield or sleep.
// Concurrency Kit's ticket lock sits these groups out: its FIFO hands the lock to the next
// ticket even when that thread is preempted, so every hand-off to a descheduled waiter waits
// for a time slice; a first long-round run was still inside that one benchmark when it was
// stopped, 23 minutes after it started (its 1,000-operation rounds, which escape preemption,
// read 21 ns, four times the other spin locks).
//
// Names: "<Workload> / <n> thread(s) / <Contender>", the convention ratios.py groups on.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport
import LockContenders

/// Operations per iteration, over all threads.
let operationsPerIteration = 1_000
/// Operations per iteration, over all threads, when the threads oversubscribe the cores.
let oversubscribedOperationsPerIteration = 1_000_000
/// Threads from which a group is oversubscribed on the 2-core benchmark machine.
let oversubscribedThreads = 4

/// The measurement of a group of `threads` threads: its operations per iteration and its
/// configuration (see the file comment on long rounds).
func measurement(threads: Int) -> (operations: Int, configuration: Benchmark.Configuration) {
    guard threads >= oversubscribedThreads else { return (operationsPerIteration, locksConfiguration) }
    var configuration = locksConfiguration
    configuration.scalingFactor = .mega
    configuration.warmupIterations = 3
    return (oversubscribedOperationsPerIteration, configuration)
}

var locksConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 200, maxDuration: .milliseconds(1_000), maxIterations: 20_000)
}

func threadsLabel(_ threads: Int) -> String { threads == 1 ? "1 thread" : "\(threads) threads" }

/// Registers `workload / threads / Contender`: each thread adds one under the lock, its share
/// of the iteration's operations.
func registerCounter<Contender: CounterLock>(_: Contender.Type, kind: String, workload: String, threads: Int) {
    let (operations, configuration) = measurement(threads: threads)
    precondition(operations % threads == 0, "LocksBenchmarks: \(threads) threads do not split the work")
    let contender = Contender()
    let share = operations / threads
    let team = ThreadTeam(threads: threads) { _ in
        for _ in 0..<share { contender.incrementUnderLock() }
    }
    registerCounterRounds(
        "\(kind) \(workload) / \(threadsLabel(threads)) / \(Contender.contenderName)", configuration, team,
        operations: operations, count: contender.countUnderLock)
}

/// Hides `contender`'s type from the optimizer, so that calls through the result go through
/// the conformance's protocol witness.
@inline(never)
func opaqueCounterLock(_ contender: any CounterLock) -> any CounterLock { contender }

/// Registers `<kind> via a protocol witness lock+unlock / 1 thread / Contender`: the
/// uncontended lock+unlock called through `any CounterLock`, so through the contender's
/// witness thunk, where Swift's IRGen marks every call noinline (Sources/Interlock/Atomics/
/// WordAtomics.swift): a lock whose fast path calls a C `static inline` function pays a call
/// there, one whose fast path is a Swift atomic builtin does not.
func registerCounterThroughWitness<Contender: CounterLock>(_: Contender.Type, kind: String) {
    let (operations, configuration) = measurement(threads: 1)
    let contender = opaqueCounterLock(Contender())
    let team = ThreadTeam(threads: 1) { _ in
        for _ in 0..<operations { contender.incrementUnderLock() }
    }
    registerCounterRounds(
        "\(kind) via a protocol witness lock+unlock / 1 thread / \(Contender.contenderName)", configuration, team,
        operations: operations, count: contender.countUnderLock)
}

/// The benchmark of a counter team: one round per iteration; teardown checks that `count()`
/// equals the increments timed.
func registerCounterRounds(
    _ name: String, _ configuration: Benchmark.Configuration, _ team: ThreadTeam, operations: Int,
    count: @escaping @Sendable () -> Int
) {
    Benchmark(
        name,
        configuration: configuration,
        closure: { benchmark in
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: {
            team.stop()
            let expected = team.completedRounds * operations
            let found = count()
            precondition(found == expected, "LocksBenchmarks: \(name) counted \(found), expected \(expected)")
        }
    )
}

/// What a reader-writer benchmark does per operation.
enum RWMix: Sendable {
    case readOnly, writeOnly, readMostly
    var name: String {
        switch self {
        case .readOnly: "read lock+unlock"
        case .writeOnly: "write lock+unlock"
        case .readMostly: "95% reads"
        }
    }
}

func registerRW<Contender: CounterRWLock>(_: Contender.Type, mix: RWMix, threads: Int) {
    let (operations, configuration) = measurement(threads: threads)
    precondition(operations % threads == 0, "LocksBenchmarks: \(threads) threads do not split the work")
    let contender = Contender()
    let share = operations / threads
    let writesPerShare = mix == .writeOnly ? share : mix == .readMostly ? (share + 19) / 20 : 0  // i % 20 == 0
    let team = ThreadTeam(threads: threads) { _ in
        var sum = 0
        switch mix {
        case .readOnly:
            for _ in 0..<share { sum &+= contender.readUnderLock() }
        case .writeOnly:
            for _ in 0..<share { contender.incrementUnderWriteLock() }
        case .readMostly:
            for i in 0..<share {
                if i % 20 == 0 {
                    contender.incrementUnderWriteLock()
                } else {
                    sum &+= contender.readUnderLock()
                }
            }
        }
        blackHole(sum)
    }
    Benchmark(
        "ReadWriteLock \(mix.name) / \(threadsLabel(threads)) / \(Contender.contenderName)",
        configuration: configuration,
        closure: { benchmark in
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: {
            team.stop()
            let expected = team.completedRounds * writesPerShare * threads
            let found = contender.readUnderLock()
            precondition(
                found == expected,
                "LocksBenchmarks: \(Contender.contenderName) counted \(found) writes, expected \(expected)")
        }
    )
}

let benchmarks: @Sendable () -> Void = {
    // Contenders of one group are registered next to each other, so they run close in time.
    for threads in [1, 2, 4] {
        let workload = threads == 1 ? "lock+unlock" : "shared counter"
        registerCounter(InterlockLockContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(CompatUnfairLockContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(CompatAllocatedUnfairLockContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(PthreadMutexContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(PthreadAdaptiveMutexContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(NSLockContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(SynchronizationMutexContender.self, kind: "Mutex", workload: workload, threads: threads)
        registerCounter(NIOLockContender.self, kind: "Mutex", workload: workload, threads: threads)

        registerCounter(
            SynchronizationMutexInlineContender.self, kind: "Mutex, value inline,", workload: workload, threads: threads
        )
        registerCounter(
            CompatAllocatedUnfairLockInlineContender.self, kind: "Mutex, value inline,", workload: workload,
            threads: threads)
        registerCounter(
            NIOLockedValueBoxContender.self, kind: "Mutex, value inline,", workload: workload, threads: threads)
        registerCounter(
            InterlockLockedContender.self, kind: "Mutex, value inline,", workload: workload, threads: threads)
        registerCounter(
            PthreadMutexInlineContender.self, kind: "Mutex, value inline,", workload: workload, threads: threads)

        registerCounter(InterlockSpinLockContender.self, kind: "SpinLock", workload: workload, threads: threads)
        registerCounter(CompatOSSpinLockContender.self, kind: "SpinLock", workload: workload, threads: threads)
        registerCounter(PthreadSpinContender.self, kind: "SpinLock", workload: workload, threads: threads)
        registerCounter(CKSpinlockFASContender.self, kind: "SpinLock", workload: workload, threads: threads)
        if threads < oversubscribedThreads {  // see the file comment
            registerCounter(CKSpinlockTicketContender.self, kind: "SpinLock", workload: workload, threads: threads)
        }

        registerCounter(
            InterlockRecursiveLockContender.self, kind: "RecursiveLock", workload: workload, threads: threads)
        registerCounter(
            PthreadRecursiveMutexContender.self, kind: "RecursiveLock", workload: workload, threads: threads)
        registerCounter(NSRecursiveLockContender.self, kind: "RecursiveLock", workload: workload, threads: threads)
    }
    for (mix, threads) in [(RWMix.readOnly, 1), (.writeOnly, 1), (.readMostly, 2), (.readMostly, 4)] {
        registerRW(InterlockRWLockContender.self, mix: mix, threads: threads)
        registerRW(InterlockRWLockedContender.self, mix: mix, threads: threads)
        registerRW(PthreadRWLockContender.self, mix: mix, threads: threads)
        registerRW(PthreadWriterPreferringRWLockContender.self, mix: mix, threads: threads)
        registerRW(CKRWLockContender.self, mix: mix, threads: threads)
    }
    // Through a protocol witness (see registerCounterThroughWitness), uncontended. Registered
    // last: contenders are allocated at registration, and registering these first moved the
    // other contenders' objects in the heap, which alone took "Interlock SpinLock" in
    // "SpinLock shared counter / 2 threads" from 14.9 to 22-24 ns (same code, main's and this
    // one's: a lock object sharing a line with another hot allocation).
    registerCounterThroughWitness(InterlockLockContender.self, kind: "Mutex")
    registerCounterThroughWitness(InterlockLockedContender.self, kind: "Mutex, value inline,")
    registerCounterThroughWitness(SynchronizationMutexInlineContender.self, kind: "Mutex, value inline,")
    registerCounterThroughWitness(NIOLockedValueBoxContender.self, kind: "Mutex, value inline,")
    registerCounterThroughWitness(CompatUnfairLockContender.self, kind: "Mutex")
    registerCounterThroughWitness(SynchronizationMutexContender.self, kind: "Mutex")
    registerCounterThroughWitness(PthreadMutexContender.self, kind: "Mutex")
    registerCounterThroughWitness(NIOLockContender.self, kind: "Mutex")
    registerCounterThroughWitness(InterlockSpinLockContender.self, kind: "SpinLock")
    registerCounterThroughWitness(CompatOSSpinLockContender.self, kind: "SpinLock")
    registerCounterThroughWitness(CKSpinlockFASContender.self, kind: "SpinLock")
    registerCounterThroughWitness(PthreadSpinContender.self, kind: "SpinLock")
    registerCounterThroughWitness(InterlockRecursiveLockContender.self, kind: "RecursiveLock")
    registerCounterThroughWitness(PthreadRecursiveMutexContender.self, kind: "RecursiveLock")
}
