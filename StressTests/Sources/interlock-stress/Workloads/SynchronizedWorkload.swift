// Stress workload `synchronized-nesting`: every thread locks random subsets of a pool of 16
// objects with synchronized(_:_:), nested in the pool's order (ascending index), re-enters
// objects it holds, sometimes throws out of the innermost body, sometimes nests 12 deep (past
// the per-thread held stack, so the table's owner check and depth run under contention), and
// churns fresh objects, alone or inside a pool object.
//
// Invariants checked:
//   - exclusion per object: each pool object carries a plain holder slot (the thread inside,
//     checked on entry, at re-entry and on exit) and a plain counter; at the end each
//     counter equals the sum of the increments the threads made under that object;
//   - re-entry: a re-entered object still names the re-entering thread as its holder;
//   - release on throw: a thrown body leaves nothing locked (later sections get in, and the
//     holder slots are 0 at the end);
//   - no deadlock: every nesting follows one global order (fresh objects are private to their
//     thread), so only a lock shared between distinct objects or a lost release could hang;
//     the harness's watchdog reports a hang;
//   - memory: at the end no record is in use, and the table holds a number of records bounded
//     by the buckets and the objects locked at once, not by the objects ever locked (which
//     grow with the run); every allocated record is linked or freed.

@_spi(Diagnostics) import Interlock

/// A pool object: plain fields that only synchronized(self) keeps consistent.
final class SynchronizedStressObject: @unchecked Sendable {
    /// Increments made under synchronized(self).
    var count = 0
    /// The worker inside synchronized(self) (index plus one), 0 when none.
    var holder = 0
}

/// Thrown out of the innermost body to check that every level releases its object.
private struct SynchronizedStressUnwind: Error {}

extension Workload {
    /// `synchronized-nesting`; see the file comment.
    static let synchronizedNesting = Workload(
        name: "synchronized-nesting",
        summary:
            "synchronized: ordered nested subsets of 16 objects, re-entry, throws, 12-deep nests, fresh objects; exact counts, bounded records"
    ) { context in
        let pool = (0..<16).map { _ in SynchronizedStressObject() }
        let before = SynchronizedCensus.take()
        let perThread = context.runThreads { worker -> (tally: [Int], fresh: Int) in
            var tally = [Int](repeating: 0, count: pool.count)
            var fresh = 0
            // Recent fresh objects kept alive a while, so that their addresses vary over
            // hundreds of values instead of the allocator handing back the last one freed.
            var recent = [SynchronizedStressObject?](repeating: nil, count: 256)
            var problem: String? = nil
            let me = worker.index + 1  // copied: `worker` is busy inside operation {}

            // Locks pool[path[level...]] nested, in that (ascending) order; at the innermost
            // level counts under every object of `path`, re-enters `reenter`, maybe throws.
            func nest(_ path: [Int], _ level: Int, reenter: [Int], unwind: Bool) throws {
                if level == path.count {
                    for j in path {
                        pool[j].count += 1
                        tally[j] += 1
                    }
                    for j in reenter {
                        synchronized(pool[j]) {
                            if pool[j].holder != me {
                                problem =
                                    "thread \(me - 1) re-entered object \(j), whose holder slot says \(pool[j].holder - 1)"
                            }
                            pool[j].count += 1
                            tally[j] += 1
                        }
                    }
                    if unwind { throw SynchronizedStressUnwind() }
                    return
                }
                let index = path[level]
                let object = pool[index]
                try synchronized(object) {
                    if object.holder != 0 {
                        problem =
                            "thread \(me - 1) entered object \(index) while thread \(object.holder - 1) was inside"
                    }
                    object.holder = me
                    defer {
                        if object.holder != me {
                            problem =
                                "thread \(object.holder - 1) entered object \(index) while thread \(me - 1) was inside"
                        }
                        object.holder = 0
                    }
                    try nest(path, level + 1, reenter: reenter, unwind: unwind)
                }
            }

            while worker.keepRunning {
                let random = worker.random.next()
                worker.operation {
                    switch random & 63 {
                    case 0:
                        // 12 deep, past the held stack's slots; re-enter the first and the last.
                        let start = Int(random >> 6 & 3)
                        let path = Array(start..<(start + 12))
                        try? nest(path, 0, reenter: [path[0], path[11]], unwind: random >> 8 & 1 == 0)
                    case 1...8:
                        // A fresh object, alone or inside a pool object (pool first: fresh
                        // objects are private, so no order between them matters).
                        let object = SynchronizedStressObject()
                        let outer = pool[Int(random >> 6) % pool.count]
                        let body = {
                            synchronized(object) {
                                object.count += 1
                                synchronized(object) { object.count += 1 }
                            }
                        }
                        if random >> 12 & 1 == 0 { body() } else { synchronized(outer, body) }
                        if object.count != 2 { problem = "a fresh object counted \(object.count), not 2" }
                        recent[fresh & 255] = object
                        fresh += 1
                    default:
                        // 1 to 4 pool objects, ascending; maybe re-enter one; 1 in 16 throws.
                        var path: [Int] = []
                        var mask = UInt16(truncatingIfNeeded: random >> 8)
                        let most = Int(random >> 6 & 3) + 1
                        while mask != 0 && path.count < most {
                            path.append(mask.trailingZeroBitCount)
                            mask &= mask &- 1
                        }
                        if path.isEmpty { path = [Int(random >> 24) % pool.count] }
                        let reenter = random >> 28 & 1 == 0 ? [path[Int(random >> 30) % path.count]] : []
                        try? nest(path, 0, reenter: reenter, unwind: random >> 32 & 15 == 0)
                    }
                }
                if let found = problem {
                    context.fail(found)
                    problem = nil
                }
            }
            return (tally, fresh)
        }
        for (j, object) in pool.enumerated() {
            let expected = perThread.reduce(0) { $0 + $1.tally[j] }
            context.check(
                object.count == expected,
                "object \(j) counted \(object.count) under its lock, the threads made \(expected)")
            context.check(object.holder == 0, "object \(j) still names thread \(object.holder - 1) as inside")
        }
        let after = SynchronizedCensus.take()
        let freshObjects = perThread.reduce(0) { $0 + $1.fresh }
        // Records left: per bucket, those in use at its last claim that found none plus one
        // spare; at most 13 objects are held at once per thread.
        let bound = 2 * SynchronizedCensus.bucketCount + pool.count + 13 * context.threadCount
        context.check(after.inUse == 0, "\(after.inUse) records still in use after every thread returned")
        context.check(
            after.linked <= bound,
            "\(after.linked) records linked after \(freshObjects) fresh objects (bound \(bound))")
        context.check(
            after.linked == after.allocated - after.freed,
            "\(after.linked) records linked, \(after.allocated) allocated, \(after.freed) freed")
        context.note("fresh objects", freshObjects)
        context.note("records linked at the end", after.linked)
        context.note(
            "records allocated / freed", "\(after.allocated - before.allocated) / \(after.freed - before.freed)")
    }
}
