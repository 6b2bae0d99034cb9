// Stress workload `rwlock-no-torn-reads`: readers and writers share eight plain words under one
// ReadWriteLock. A writer (1 section in 8) sets all eight words to the next value; a reader
// (7 in 8) reads them and checks they are all equal. Every thread does both, through all of
// `lockRead`/`lockWrite`, the try forms retried until they succeed, and the timed forms with a
// deadline 1 ms ahead retried after each timeout (timed-out writers exercise the clean-up of the
// writers-waiting bit).
//
// Invariants checked:
//   - no torn read: a reader never sees words that differ (a writer inside with it);
//   - writer exclusion: a writer sees no reader and no other writer inside (atomic occupancy
//     counts kept next to the plain words), and a reader sees no writer inside;
//   - no lost write: at the end every word equals the number of write sections run;
//   - reader overlap happens: the largest number of readers seen inside at once is noted
//     (more than 1 shows readers really share the lock).

import CStressSupport
import Interlock

extension Workload {
    /// `rwlock-no-torn-reads`; see the file comment.
    static let readWriteLockNoTornReads = Workload(
        name: "rwlock-no-torn-reads",
        summary: "ReadWriteLock: writers set 8 words equal, readers check; no torn read, writer exclusion, exact writes"
    ) { context in
        let lock = ReadWriteLock()
        let words = SharedBuffer<Int>(count: 8, repeating: 0)
        let readersInside = AtomicInt(0)
        let writersInside = AtomicInt(0)
        let mostReaders = AtomicInt(0)
        let perThread = context.runThreads { worker -> Int in
            var writes = 0
            var reported = false
            while worker.keepRunning {
                let random = worker.random.next()
                let write = random & 7 == 0
                let how = (random >> 3) & 7  // 0: try form, 1: timed form, else: blocking
                let problem: String? = worker.operation {
                    var problem: String? = nil
                    if write {
                        switch how {
                        case 0: while !lock.tryLockWrite() { ilk_stress_thread_yield() }
                        case 1: while !lock.lockWrite(before: .now + .milliseconds(1)) {}
                        default: lock.lockWrite()
                        }
                        if writersInside.increment() != 1 { problem = "two writers inside at once" }
                        if readersInside.load() != 0 { problem = "a writer inside with readers" }
                        let next = words.base[0] + 1
                        for i in 0..<8 { words.base[i] = next }
                        writersInside.decrement()
                        lock.unlockWrite()
                    } else {
                        switch how {
                        case 0: while !lock.tryLockRead() { ilk_stress_thread_yield() }
                        case 1: while !lock.lockRead(before: .now + .milliseconds(1)) {}
                        default: lock.lockRead()
                        }
                        let inside = readersInside.increment()
                        if inside > mostReaders.load(ordering: .relaxed) {
                            // Relaxed: a statistic, read after the join.
                            mostReaders.store(inside, ordering: .relaxed)
                        }
                        if writersInside.load() != 0 { problem = "a reader inside with a writer" }
                        let first = words.base[0]
                        for i in 1..<8 where words.base[i] != first {
                            problem = "torn read: word 0 is \(first), word \(i) is \(words.base[i])"
                        }
                        readersInside.decrement()
                        lock.unlockRead()
                    }
                    return problem
                }
                if write { writes += 1 }
                if let problem, !reported {
                    reported = true
                    context.fail(problem)
                }
            }
            return writes
        }
        let expected = perThread.reduce(0, +)
        for i in 0..<8 {
            context.check(
                words.base[i] == expected,
                "word \(i) ended at \(words.base[i]) after \(expected) write sections: writes lost")
        }
        context.note("most readers inside at once", mostReaders.load())
    }
}
