// Interlock's AtomicInt64, used exactly as a client writes it: the class is the contender.
// Its word is the object's only stored property, so it sits at a fixed offset in the object.

import Interlock

extension AtomicInteger: AtomicCounter where Value == Int64 {
    static var contenderName: String { "Interlock AtomicInt64" }

    @inline(__always)
    func benchIncrement() { increment(ordering: .sequentiallyConsistent) }

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
