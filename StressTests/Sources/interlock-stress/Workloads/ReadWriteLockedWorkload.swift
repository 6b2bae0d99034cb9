// Stress workload `rwlocked-snapshots`: a snapshot of eight plain words inside one
// ReadWriteLocked. A writer (1 section in 8) sets all eight words to the next version; a reader
// (7 in 8) checks they are all equal and never older than the last version it saw. Every
// thread does both, through the blocking forms and the timed forms with a deadline 1 ms ahead
// (retried after each `nil`); one write in four throws a typed error after changing nothing.
//
// Invariants checked:
//   - no torn read: a reader never sees words that differ (a writer inside with it);
//   - writer exclusion: a writer sees no reader and no other writer inside (atomic occupancy
//     counts), and a reader sees no writer inside;
//   - readers see versions in order: a thread's reads never go back;
//   - no lost write: the final version equals the number of writes that did not throw;
//   - the timed forms never return nil before their deadline.

import CStressSupport
import Interlock

/// The value the workload's `ReadWriteLocked` protects.
private struct Snapshot {
    var words = [Int](repeating: 0, count: 8)
}

/// The typed error of a write that changes its mind.
private struct Rejected: Error {}

extension Workload {
    /// `rwlocked-snapshots`; see the file comment.
    static let readWriteLockedSnapshots = Workload(
        name: "rwlocked-snapshots",
        summary: "ReadWriteLocked: writers version 8 words, readers check equal and in order; timed forms, typed throws"
    ) { context in
        let snapshot = ReadWriteLocked(Snapshot())
        let readersInside = AtomicInt(0)
        let writersInside = AtomicInt(0)
        let mostReaders = AtomicInt(0)
        let perThread = context.runThreads { worker -> Int in
            var writes = 0
            var lastSeen = 0
            var reported = false
            while worker.keepRunning {
                let random = worker.random.next()
                let write = random & 7 == 0
                let timed = (random >> 3) & 3 == 0
                let reject = (random >> 5) & 3 == 0
                let problem: String? = worker.operation {
                    var problem: String? = nil
                    if write {
                        let body = { (snapshot: inout Snapshot) throws(Rejected) -> Void in
                            if writersInside.increment() != 1 { problem = "two writers inside at once" }
                            if readersInside.load() != 0 { problem = "a writer inside with readers" }
                            defer { writersInside.decrement() }
                            if reject { throw Rejected() }
                            let next = snapshot.words[0] + 1
                            for i in 0..<8 { snapshot.words[i] = next }
                        }
                        do throws(Rejected) {
                            if timed {
                                while true {
                                    let deadline = ContinuousClock.now + .milliseconds(1)
                                    if try snapshot.withWriteLock(before: deadline, body) != nil { break }
                                    if ContinuousClock.now < deadline {
                                        problem = "withWriteLock(before:) returned nil early"
                                    }
                                }
                            } else {
                                try snapshot.withWriteLock(body)
                            }
                            writes += 1
                        } catch {}
                    } else {
                        let body = { (snapshot: borrowing Snapshot) -> Int in
                            let inside = readersInside.increment()
                            if inside > mostReaders.load(ordering: .relaxed) {
                                // Relaxed: a statistic, read after the join.
                                mostReaders.store(inside, ordering: .relaxed)
                            }
                            if writersInside.load() != 0 { problem = "a reader inside with a writer" }
                            let first = snapshot.words[0]
                            for i in 1..<8 where snapshot.words[i] != first {
                                problem = "torn read: word 0 is \(first), word \(i) is \(snapshot.words[i])"
                            }
                            readersInside.decrement()
                            return first
                        }
                        var seen = 0
                        if timed {
                            while true {
                                let deadline = ContinuousClock.now + .milliseconds(1)
                                if let version = snapshot.withReadLock(before: deadline, body) {
                                    seen = version
                                    break
                                }
                                if ContinuousClock.now < deadline {
                                    problem = "withReadLock(before:) returned nil early"
                                }
                            }
                        } else {
                            seen = snapshot.withReadLock(body)
                        }
                        if seen < lastSeen { problem = "version \(seen) read after \(lastSeen): reads went back" }
                        lastSeen = seen
                    }
                    return problem
                }
                if let problem, !reported {
                    reported = true
                    context.fail(problem)
                }
            }
            return writes
        }
        let expected = perThread.reduce(0, +)
        let words = snapshot.withReadLock { $0.words }
        for i in 0..<8 {
            context.check(words[i] == expected, "word \(i) ended at \(words[i]) after \(expected) writes: writes lost")
        }
        context.note("most readers inside at once", mostReaders.load())
    }
}
