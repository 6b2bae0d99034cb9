// Stress workload `atomic-bitwise-ownership`: threads share 64-bit words; each thread owns
// distinct bits of its word and flips only those, with bitwiseXor, bitwiseOr, bitwiseAnd,
// testAndSet(bit:) and testAndClear(bit:), while the other threads do the same to theirs.
//
// Layout: with T threads there are ceil(T / 16) words; thread i works on word i % words,
// among the k threads of that word it has rank j = i / words, and it owns the bits b < 63 with
// b % k == j (at least three bits each). Bit 63 of every word is a sentinel that nobody owns:
// it is set at the start and must stay set.
//
// Invariants, checked on every operation from the value it returns:
// - a thread's own bits are exactly what it last made them (only it writes them): a
//   non-atomic read-modify-write elsewhere writes back a stale copy of them and is caught;
// - the sentinel is set (no operation changes a bit outside its mask);
// - the documented return conventions: the bitwise operations return the NEW value,
//   testAndSet/testAndClear the bit's OLD state.
// At the end every word equals the sentinel plus the union of its owners' final bits.
// Orderings alternate between relaxed and sequentially consistent: all of the above concerns a
// single location, whose modification order makes it hold for any ordering.

import Interlock

extension Workload {
    /// `atomic-bitwise-ownership`; see the file comment.
    static let atomicBitwiseOwnership = Workload(
        name: "atomic-bitwise-ownership",
        summary: "AtomicUInt64 xor/or/and/testAndSet/testAndClear on owned bits; no foreign bit changes"
    ) { context in
        let sentinel: UInt64 = 1 << 63
        let wordCount = (context.threadCount + 15) / 16
        let words = (0..<wordCount).map { _ in AtomicUInt64(sentinel) }
        let finals = context.runThreads { worker -> UInt64 in
            let word = words[worker.index % wordCount]
            let sharers = (worker.threadCount - worker.index % wordCount + wordCount - 1) / wordCount
            let rank = worker.index / wordCount
            let ownBits = (0..<63).filter { $0 % sharers == rank }
            let own = ownBits.reduce(UInt64(0)) { $0 | (1 << UInt64($1)) }
            var mine: UInt64 = 0  // what this thread's bits are now
            var reported = false
            func verify(_ value: UInt64, _ operation: @autoclosure () -> String) {
                if (value & own != mine || value & sentinel == 0) && !reported {
                    reported = true
                    context.fail(
                        "thread \(worker.index): after \(operation()) the word is \(hex(value)); "
                            + "own bits \(hex(value & own)) should be \(hex(mine)), sentinel \(value & sentinel != 0 ? "set" : "CLEARED")"
                    )
                }
            }
            while worker.keepRunning {
                let random = worker.random.next()
                let mask = random & own
                let ordering: MemoryOrder = random >> 63 == 0 ? .relaxed : .sequentiallyConsistent
                switch (random >> 56) % 5 {
                case 0:
                    let new = worker.operation { word.bitwiseXor(mask, ordering: ordering) }
                    mine ^= mask
                    verify(new, "bitwiseXor(\(hex(mask)))")
                case 1:
                    let new = worker.operation { word.bitwiseOr(mask, ordering: ordering) }
                    mine |= mask
                    verify(new, "bitwiseOr(\(hex(mask)))")
                case 2:
                    let new = worker.operation { word.bitwiseAnd(~mask, ordering: ordering) }
                    mine &= ~mask
                    verify(new, "bitwiseAnd(\(hex(~mask)))")
                default:
                    let bit = ownBits[Int((random >> 40) % UInt64(ownBits.count))]
                    let setting = (random >> 56) % 5 == 3
                    let old = worker.operation {
                        setting
                            ? word.testAndSet(bit: bit, ordering: ordering)
                            : word.testAndClear(bit: bit, ordering: ordering)
                    }
                    let expected = mine & (1 << UInt64(bit)) != 0
                    if setting { mine |= 1 << UInt64(bit) } else { mine &= ~(1 << UInt64(bit)) }
                    if old != expected && !reported {
                        reported = true
                        context.fail(
                            "thread \(worker.index): \(setting ? "testAndSet" : "testAndClear")(bit: \(bit)) returned \(old), the bit was \(expected)"
                        )
                    }
                }
            }
            return mine
        }
        for (index, word) in words.enumerated() {
            var expected = sentinel
            for thread in stride(from: index, to: context.threadCount, by: wordCount) { expected |= finals[thread] }
            let final = word.load()
            context.check(final == expected, "word \(index) ends as \(hex(final)), expected \(hex(expected))")
        }
        context.note("shared words", wordCount)
    }
}

/// `0x` and 16 hexadecimal digits.
private func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 16 - digits.count) + digits
}
