// Stress workload `rwlock-timeouts`: the sleeping paths of ReadWriteLock under timeouts. Half of
// all sections write; most acquisitions are timed with deadlines of 0-63 us, short enough that
// readers and writers often give up while registered as sleepers, while granted, or while a
// writer waits for readers to leave (the paths of a grant racing a timeout, of the last writer
// to leave clearing P and nudging readers, of a timed claimant releasing W with readers queued
// behind it). The rest block, so that sleepers always exist.
//
// Invariants checked:
//   - exclusion: a writer sees no reader and no other writer inside, a reader sees no writer;
//   - a timed form that returned true holds the lock (the section's checks), and one that
//     returned false holds nothing (the final count and the final try forms would fail);
//   - no lost write: the shared count equals the successful write sections;
//   - no lost wake-up: every thread keeps making progress (a hang trips the watchdog), and at
//     the end the lock is free (tryLockWrite succeeds) with no reader left counted.

import CStressSupport
import Interlock

extension Workload {
    /// `rwlock-timeouts`; see the file comment.
    static let readWriteLockTimeouts = Workload(
        name: "rwlock-timeouts",
        summary:
            "ReadWriteLock: half writes, timed forms with 0-63 us deadlines; exclusion, exact writes, no lost wake-up"
    ) { context in
        let lock = ReadWriteLock()
        let count = SharedBuffer<Int>(count: 1, repeating: 0)
        let readersInside = AtomicInt(0)
        let writersInside = AtomicInt(0)
        let timeouts = AtomicInt(0)
        let perThread = context.runThreads { worker -> Int in
            var writes = 0
            var reported = false
            while worker.keepRunning {
                let random = worker.random.next()
                let write = random & 1 == 0
                let timed = (random >> 1) & 3 != 0  // three in four timed
                let deadline = ContinuousClock.now + .microseconds(Int64((random >> 3) & 63))
                // (wrote, problem): whether a write section ran, and what it saw wrong.
                let (wrote, problem): (Bool, String?) = worker.operation {
                    if write {
                        if timed {
                            guard lock.lockWrite(before: deadline) else { timeouts.increment(); return (false, nil) }
                        } else {
                            lock.lockWrite()
                        }
                        var problem: String? = nil
                        if writersInside.increment() != 1 { problem = "two writers inside at once" }
                        if readersInside.load() != 0 { problem = "a writer inside with readers" }
                        count.base[0] += 1
                        writersInside.decrement()
                        lock.unlockWrite()
                        return (true, problem)
                    }
                    if timed {
                        guard lock.lockRead(before: deadline) else { timeouts.increment(); return (false, nil) }
                    } else {
                        lock.lockRead()
                    }
                    readersInside.increment()
                    let problem = writersInside.load() != 0 ? "a reader inside with a writer" : nil
                    _ = count.base[0]
                    readersInside.decrement()
                    lock.unlockRead()
                    return (false, problem)
                }
                if wrote { writes += 1 }
                if let problem, !reported {
                    reported = true
                    context.fail(problem)
                }
            }
            return writes
        }
        let expected = perThread.reduce(0, +)
        context.check(
            count.base[0] == expected,
            "the count ended at \(count.base[0]) after \(expected) write sections: writes lost")
        // No lock leaked (a timed form that returned false holding it, or a granted reader
        // that reported a timeout): a final write lock is free at once.
        let free = lock.tryLockWrite()
        context.check(free, "the lock is not free after every thread stopped: a read or write lock leaked")
        if free { lock.unlockWrite() }
        context.note("timed acquisitions that timed out", timeouts.load())
    }
}
