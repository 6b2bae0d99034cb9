// Stress workload `atomic-testandset-bitmap`: the raw-memory atomicTestAndSet and
// atomicTestAndClear (OSAtomic's bit numbering) on a small shared bitmap, each bit used as a
// claim: the thread whose test-and-set finds the bit clear owns it until it clears it.
//
// Protocol: a thread picks a random bit; `atomicTestAndSet(bit, ordering: .acquire)` returning
// false makes it the owner; it bumps that bit's plain claim counter, then releases with
// `atomicTestAndClear(bit, ordering: .release)`, which must find the bit still set.
// The bitmap has max(16, 2 × threads) bits rounded up to whole bytes, so neighbouring bits in
// one byte are claimed concurrently: a byte-wide read-modify-write that is not atomic clears
// or resurrects a neighbour's bit.
//
// Invariants:
// - one owner at a time: the owner's test-and-clear finds its bit still set (a second
//   "owner", or a neighbour's stale byte write, clears it first);
// - Σ per-bit plain claim counters == Σ claims (overlapping owners collide on the counter;
//   acquire/release orders the plain accesses, so ThreadSanitizer checks the orderings too);
// - the bitmap is all zero at the end;
// - before the run, the numbering: on a zeroed bitmap bit 0 is 0x80 of byte 0, bit 15 is 0x01
//   of byte 1 (OSAtomicTestAndSet's numbering).

import Interlock

extension Workload {
    /// `atomic-testandset-bitmap`; see the file comment.
    static let atomicTestAndSetBitmap = Workload(
        name: "atomic-testandset-bitmap",
        summary: "raw-memory atomicTestAndSet/Clear claims on a shared bitmap; one owner per bit, exact claim count"
    ) { context in
        let bitCount = (max(16, 2 * context.threadCount) + 7) / 8 * 8
        let bitmap = SharedBuffer<UInt8>(count: bitCount / 8, repeating: 0)
        let claimCounters = SharedBuffer<Int>(count: bitCount, repeating: 0)

        // The numbering, single-threaded, before the run.
        _ = atomicTestAndSet(0, bitmap.raw)
        _ = atomicTestAndSet(15, bitmap.raw)
        context.check(
            bitmap.base[0] == 0x80 && bitmap.base[1] == 0x01,
            "bit numbering: bits 0 and 15 set bytes \(bitmap.base[0]), \(bitmap.base[1]); expected 128, 1")
        _ = atomicTestAndClear(0, bitmap.raw)
        _ = atomicTestAndClear(15, bitmap.raw)

        let claims = context.runThreads { worker -> Int in
            let me = worker.index
            var claimed = 0
            var reported = false
            while worker.keepRunning {
                let bit = Int(worker.random.next() % UInt64(bitCount))
                worker.operation {
                    if !atomicTestAndSet(bit, bitmap.raw, ordering: .acquire) {
                        claimed += 1
                        claimCounters.base[bit] += 1
                        let stillSet = atomicTestAndClear(bit, bitmap.raw, ordering: .release)
                        if !stillSet && !reported {
                            reported = true
                            context.fail("thread \(me): bit \(bit) was cleared by someone else while it owned it")
                        }
                    }
                }
            }
            return claimed
        }
        let totalClaims = claims.reduce(0, +)
        let counted = (0..<bitCount).reduce(0) { $0 + claimCounters.base[$1] }
        context.note("claims", totalClaims)
        context.note("bits", bitCount)
        context.check(
            counted == totalClaims,
            "per-bit claim counters add up to \(counted), but \(totalClaims) claims were made: owners overlapped")
        let leftover = (0..<bitmap.count).filter { bitmap.base[$0] != 0 }
        context.check(leftover.isEmpty, "bitmap not empty at the end: bytes \(leftover) are non-zero")
    }
}
