// Stress workload `atomic-exchange-conservation`: every thread swaps unique values into one
// AtomicUInt64 with `exchange` and keeps what it takes out.
//
// Invariant (conservation): every value put in is taken out exactly once, or is the one left
// in the slot at the end. So, with wrapping arithmetic,
//     initial + Σ put  ==  final + Σ taken        and the same with XOR.
// A non-atomic exchange (load, then store) lets two threads take the same value and loses the
// one that was overwritten: both sums move. Values are unique: thread i puts (i + 1) << 40 | n
// for its n-th operation, so the thread tag of every value taken must name a real thread.
// Orderings rotate through relaxed, acquire, release, acquireRelease and sequentially
// consistent: conservation concerns one location and holds for every ordering.

import Interlock

extension Workload {
    /// `atomic-exchange-conservation`; see the file comment.
    static let atomicExchangeConservation = Workload(
        name: "atomic-exchange-conservation",
        summary: "AtomicUInt64 exchange of unique values; every value taken out exactly once (sum and xor)"
    ) { context in
        let initial: UInt64 = 0xDEAD_BEEF
        let slot = AtomicUInt64(initial)
        let orderings: [MemoryOrder] = [.relaxed, .acquire, .release, .acquireRelease, .sequentiallyConsistent]
        let tallies = context.runThreads {
            worker -> (putSum: UInt64, putXor: UInt64, takenSum: UInt64, takenXor: UInt64) in
            let tag = UInt64(worker.index + 1) << 40
            var putSum: UInt64 = 0, putXor: UInt64 = 0, takenSum: UInt64 = 0, takenXor: UInt64 = 0
            var reported = false
            while worker.keepRunning {
                let value = tag | UInt64(truncatingIfNeeded: worker.operations & 0xFF_FFFF_FFFF)
                let ordering = orderings[worker.operations % orderings.count]
                let taken = worker.operation { slot.exchange(value, ordering: ordering) }
                putSum &+= value; putXor ^= value
                takenSum &+= taken; takenXor ^= taken
                let owner = taken >> 40
                if taken != initial && (owner == 0 || owner > UInt64(worker.threadCount)) && !reported {
                    reported = true
                    context.fail("thread \(worker.index): exchange returned \(taken), which no thread put in")
                }
            }
            return (putSum, putXor, takenSum, takenXor)
        }
        let final = slot.load()
        let putSum = tallies.reduce(initial) { $0 &+ $1.putSum }
        let takenSum = tallies.reduce(final) { $0 &+ $1.takenSum }
        let putXor = tallies.reduce(initial) { $0 ^ $1.putXor }
        let takenXor = tallies.reduce(final) { $0 ^ $1.takenXor }
        context.check(putSum == takenSum, "values not conserved: sum put in \(putSum) != sum taken out \(takenSum)")
        context.check(putXor == takenXor, "values not conserved: xor put in \(putXor) != xor taken out \(takenXor)")
    }
}
