// The lock workloads of the interleaved runner: LocksBenchmarks' contended rows, on the same
// contender types (Sources/LockContenders), as interleaved rounds. Beside busy loops at the
// benchmark's priority, package-benchmark's 1,000-operation iterations (5-30 us) are either run
// whole or cut by a 4 ms time slice, so a contender's median is one of the two (the "quantum"
// rows of Benchmarks/README.md, "Locks under load"); here one run is 10 times `--operations`
// (a million operations by default, 10-40 ms: several time slices), so every run pays its share
// of the load, and the medians compare the locks, not the phase of the scheduler a contender drew.
//
// One operation: lock, add one to the counter (or read it), unlock. The check after each run:
// the counter holds every increment made (the reader-writer rows: every write).

import BenchmarkSupport
import Interlock
import LockContenders

/// The lock workloads, in the order they run: each kind at 2 threads (the cores) and 4
/// (oversubscribed).
func lockWorkloads() -> [Workload] {
    [2, 4].flatMap { threads in
        [
            counter(
                kind: "Mutex", threads: threads,
                [
                    counterContender(InterlockLockContender.self, isInterlock: true, threads: threads),
                    counterContender(PthreadMutexContender.self, threads: threads),
                    counterContender(PthreadAdaptiveMutexContender.self, threads: threads),
                    counterContender(NSLockContender.self, threads: threads),
                    counterContender(SynchronizationMutexContender.self, threads: threads),
                    counterContender(NIOLockContender.self, threads: threads),
                ]),
            counter(
                kind: "Mutex, value inline,", threads: threads,
                [
                    counterContender(InterlockLockedContender.self, isInterlock: true, threads: threads),
                    counterContender(SynchronizationMutexInlineContender.self, threads: threads),
                    counterContender(NIOLockedValueBoxContender.self, threads: threads),
                    counterContender(PthreadMutexInlineContender.self, threads: threads),
                ]),
            // CK's ticket lock sits the 4-thread row out, as in LocksBenchmarks: its FIFO waits a
            // time slice for every preempted ticket holder.
            counter(
                kind: "SpinLock", threads: threads,
                [
                    counterContender(InterlockSpinLockContender.self, isInterlock: true, threads: threads),
                    counterContender(PthreadSpinContender.self, threads: threads),
                    counterContender(CKSpinlockFASContender.self, threads: threads),
                ]
                    + (threads < 4 ? [counterContender(CKSpinlockTicketContender.self, threads: threads)] : [])),
            counter(
                kind: "RecursiveLock", threads: threads,
                [
                    counterContender(InterlockRecursiveLockContender.self, isInterlock: true, threads: threads),
                    counterContender(PthreadRecursiveMutexContender.self, threads: threads),
                    counterContender(NSRecursiveLockContender.self, threads: threads),
                ]),
            Workload(
                name: "ReadWriteLock 95% reads / \(threads) threads", threads: threads, scale: 10,
                contenders: [
                    readMostlyContender(InterlockRWLockContender.self, isInterlock: true, threads: threads),
                    readMostlyContender(InterlockRWLockedContender.self, isInterlock: true, threads: threads),
                    readMostlyContender(PthreadRWLockContender.self, threads: threads),
                    readMostlyContender(PthreadWriterPreferringRWLockContender.self, threads: threads),
                    readMostlyContender(CKRWLockContender.self, threads: threads),
                ]),
        ]
    }
}

private func counter(kind: String, threads: Int, _ contenders: [Contender]) -> Workload {
    Workload(name: "\(kind) shared counter / \(threads) threads", threads: threads, scale: 10, contenders: contenders)
}

/// `threads` threads each add one under the lock, their share of the run's operations.
private func counterContender<C: CounterLock>(_ type: C.Type, isInterlock: Bool = false, threads: Int) -> Contender {
    Contender(name: type.contenderName, isInterlock: isInterlock) { operations in
        let contender = type.init()
        let share = operations / threads
        let expected = AtomicInt(0)
        let team = ThreadTeam(threads: threads, idleNaps: true) { _ in
            for _ in 0..<share { contender.incrementUnderLock() }
        }
        return Run(team: team) {
            // Relaxed: the check runs on the thread that joined the round; no other thread
            // touches the expectation.
            let total = expected.add(share * threads, ordering: .relaxed)  // the new value
            precondition(
                contender.countUnderLock() == total, "Interleaved: \(type.contenderName) lost increments")
        }
    }
}

/// Every 20th operation of each thread adds one under the write lock, the others read under the
/// read lock (LocksBenchmarks' "95% reads").
private func readMostlyContender<C: CounterRWLock>(_ type: C.Type, isInterlock: Bool = false, threads: Int)
    -> Contender
{
    Contender(name: type.contenderName, isInterlock: isInterlock) { operations in
        let contender = type.init()
        let share = operations / threads
        let writesPerRun = (share + 19) / 20 * threads
        let expected = AtomicInt(0)
        let team = ThreadTeam(threads: threads, idleNaps: true) { _ in
            var sum = 0
            for i in 0..<share {
                if i % 20 == 0 {
                    contender.incrementUnderWriteLock()
                } else {
                    sum &+= contender.readUnderLock()
                }
            }
            precondition(sum != -1, "unreachable: keeps the reads alive")
        }
        return Run(team: team) {
            // Relaxed: as above.
            let total = expected.add(writesPerRun, ordering: .relaxed)  // the new value
            precondition(contender.readUnderLock() == total, "Interleaved: \(type.contenderName) lost writes")
        }
    }
}
