// Stress workload `atomic-increment-64`: every thread adds to one AtomicInt64.
//
// Invariants:
// - the final value is exactly the sum of every delta added (a non-atomic read-modify-write
//   loses updates when two threads read the same value, so the total comes out short);
// - `increment` and `add` return the NEW value (as documented), so a thread's result is at least its
//   previous result plus its delta: other threads only ever add more, and no wrap-around can
//   happen in a run (2^63 is out of reach).
// Thread i alternates `increment()` with `add(i + 2)`, so that each thread's contribution is
// distinct and both entry points are exercised; all sequentially consistent (the Barrier
// form), which is what counting across threads uses in practice.

import Interlock

extension Workload {
    /// `atomic-increment-64`; see the file comment.
    static let atomicIncrement64 = Workload(
        name: "atomic-increment-64",
        summary: "AtomicInt64 increment/add from every thread; exact total, NEW-value returns"
    ) { context in
        let counter = AtomicInt64(0)
        let added = context.runThreads { worker -> Int64 in
            let delta = Int64(worker.index + 2)
            var sum: Int64 = 0
            var previous: Int64 = 0
            var reported = false
            while worker.keepRunning {
                let isAdd = worker.operations & 1 == 1
                let step: Int64 = isAdd ? delta : 1
                let now = worker.operation { isAdd ? counter.add(delta) : counter.increment() }
                sum += step
                if now < previous + step && !reported {
                    reported = true
                    context.fail(
                        "thread \(worker.index): \(isAdd ? "add(\(delta))" : "increment()") returned \(now) after \(previous): not the new value"
                    )
                }
                previous = now
            }
            return sum
        }
        let expected = added.reduce(0, +)
        let final = counter.load()
        context.check(
            final == expected,
            "final value \(final), expected \(expected): \(expected - final) lost in updates")
    }
}
