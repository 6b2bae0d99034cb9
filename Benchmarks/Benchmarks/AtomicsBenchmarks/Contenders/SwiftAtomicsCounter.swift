// swift-atomics' `ManagedAtomic<Int64>` (1.3.0): a final class whose storage is inline in the
// object, used exactly as a client writes it (the same layout as Interlock's AtomicInt64).

import Atomics

extension ManagedAtomic: AtomicCounter where Value == Int64 {
    static var contenderName: String { "swift-atomics ManagedAtomic" }

    @inline(__always)
    func benchIncrement() { wrappingIncrement(ordering: .sequentiallyConsistent) }

    @inline(__always)
    func benchLoadRelaxed() -> Int64 { load(ordering: .relaxed) }

    @inline(__always)
    func benchLoad() -> Int64 { load(ordering: .sequentiallyConsistent) }

    @inline(__always)
    func benchStore(_ value: Int64) { store(value, ordering: .sequentiallyConsistent) }

    @inline(__always)
    func benchCompareExchange(expected: Int64, desired: Int64) -> (exchanged: Bool, original: Int64) {
        compareExchange(expected: expected, desired: desired, ordering: .sequentiallyConsistent)
    }
}
