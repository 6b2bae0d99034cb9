// Stress workload `atomic-add-32-wrap`: every thread adds to and subtracts from one
// AtomicInt32 with deltas near 2^30, so the value wraps around Int32's range all the time.
//
// Invariant: arithmetic is modulo 2^32 (the documented contract: "wraps on overflow, as in C"), so the final
// value is the start plus the sum of all deltas, truncated to 32 bits. The sum is kept in
// Int64 with wrapping arithmetic, which agrees with Int32 arithmetic modulo 2^32. A lost
// update drops a delta that is large and odd, so it shows in the low 32 bits.
// Thread i cycles increment(), add(D_i), decrement(), subtract(E) with D_i = 2^30 + 2i + 1,
// E = 2^28 + 3; orderings alternate between relaxed (the barrier-free OSAtomic form) and
// sequentially consistent: a single location's modification order makes totals exact either way.

import Interlock

extension Workload {
    /// `atomic-add-32-wrap`; see the file comment.
    static let atomicAddWrapping32 = Workload(
        name: "atomic-add-32-wrap",
        summary: "AtomicInt32 add/subtract/increment/decrement that wrap around; exact total mod 2^32"
    ) { context in
        let start = Int32.max - 5
        let counter = AtomicInt32(start)
        let net = context.runThreads { worker -> Int64 in
            let up = Int32(1 << 30) + Int32(2 * (worker.index % 1000) + 1)
            let down = Int32(1 << 28) + 3
            var sum: Int64 = 0
            while worker.keepRunning {
                let step = worker.operations & 7
                let ordering: MemoryOrder = step >= 4 ? .relaxed : .sequentiallyConsistent
                switch step & 3 {
                case 0: worker.operation { counter.increment(ordering: ordering) }; sum &+= 1
                case 1: worker.operation { counter.add(up, ordering: ordering) }; sum &+= Int64(up)
                case 2: worker.operation { counter.decrement(ordering: ordering) }; sum &-= 1
                default: worker.operation { counter.subtract(down, ordering: ordering) }; sum &-= Int64(down)
                }
            }
            return sum
        }
        let total = net.reduce(0, &+)
        let expected = start &+ Int32(truncatingIfNeeded: total)
        let final = counter.load()
        context.note("net sum of deltas", total)
        context.note("times past Int32's range (about)", total.magnitude >> 32)
        context.check(
            final == expected,
            "final value \(final), expected \(expected) (start \(start) + \(total) mod 2^32)")
    }
}
