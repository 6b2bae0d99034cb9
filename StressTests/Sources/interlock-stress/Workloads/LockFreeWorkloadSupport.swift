// Shared pieces of the lock-free stack and queue workloads: how values are encoded, the
// per-thread tallies, the backlog bound, and the element class that counts its instances.
//
// A value is `producer << 40 | sequence` (sequence from 1), so a consumer can tell whose it is
// and in which order it was made; the wrapping sum of everything pushed must equal the sum of
// everything popped (plus what is drained at the end), and so must the counts: a lost,
// duplicated or torn element breaks one of them.

import Interlock

/// Encodes a producer's `sequence`-th value.
@inline(__always)
func lockFreeValue(producer: Int, sequence: UInt64) -> UInt64 {
    UInt64(producer) << 40 | sequence
}

/// The producer of `value`.
@inline(__always)
func lockFreeProducer(of value: UInt64) -> Int { Int(value >> 40) }

/// The sequence number of `value`.
@inline(__always)
func lockFreeSequence(of value: UInt64) -> UInt64 { value & 0xFF_FFFF_FFFF }

/// One thread's counts and wrapping sums of what it put in and took out.
struct LockFreeTally: Sendable {
    var produced = 0, producedSum: UInt64 = 0
    var consumed = 0, consumedSum: UInt64 = 0

    mutating func put(_ value: UInt64) { produced += 1; producedSum &+= value }
    mutating func took(_ value: UInt64) { consumed += 1; consumedSum &+= value }

    static func total(_ tallies: [LockFreeTally]) -> LockFreeTally {
        tallies.reduce(into: LockFreeTally()) {
            $0.produced += $1.produced; $0.producedSum &+= $1.producedSum
            $0.consumed += $1.consumed; $0.consumedSum &+= $1.consumedSum
        }
    }
}

/// How many elements producers may keep ahead of consumers: bounds the memory of a run in
/// which consumers are descheduled for a while.
let lockFreeBacklogLimit = 1 << 16

/// A class element: its instances are counted, so that an element released twice or never
/// shows up as a non-zero count once the container is drained and gone.
final class LockFreeStressElement: Sendable {
    let value: UInt64
    let live: AtomicInt

    init(_ value: UInt64, live: AtomicInt) {
        self.value = value
        self.live = live
        // Relaxed: a pure count; the final read happens after every thread was joined.
        live.increment(ordering: .relaxed)
    }

    deinit {
        live.decrement(ordering: .relaxed)
    }
}

/// Checks the conservation of elements: counts and sums in == out.
func checkLockFreeConservation(_ context: WorkloadContext, _ total: LockFreeTally, what: String) {
    context.check(
        total.produced == total.consumed,
        "\(what): \(total.produced) elements put in, \(total.consumed) taken out")
    context.check(
        total.producedSum == total.consumedSum,
        "\(what): checksum of elements put in \(total.producedSum) != taken out \(total.consumedSum)")
    context.note("elements", total.produced)
}
