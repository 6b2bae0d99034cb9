// Swift's standard `Synchronization.Atomic<Int64>`: a noncopyable struct, so it lives as the
// only stored property of a final class, at a fixed offset in the object (the same layout as
// Interlock's AtomicInt64).

import Synchronization

/// A class holding one `Atomic<Int64>`.
final class SynchronizationCounter: AtomicCounter {
    let atomic = Atomic<Int64>(0)

    /// A counter holding zero.
    init() {}

    static var contenderName: String { "Synchronization.Atomic" }

    @inline(__always)
    func benchIncrement() { atomic.wrappingAdd(1, ordering: .sequentiallyConsistent) }

    @inline(__always)
    func benchLoadRelaxed() -> Int64 { atomic.load(ordering: .relaxed) }

    @inline(__always)
    func benchLoad() -> Int64 { atomic.load(ordering: .sequentiallyConsistent) }

    @inline(__always)
    func benchStore(_ value: Int64) { atomic.store(value, ordering: .sequentiallyConsistent) }

    @inline(__always)
    func benchCompareExchange(expected: Int64, desired: Int64) -> (exchanged: Bool, original: Int64) {
        atomic.compareExchange(expected: expected, desired: desired, ordering: .sequentiallyConsistent)
    }
}
