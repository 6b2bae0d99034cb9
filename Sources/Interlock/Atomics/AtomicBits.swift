// Test-and-set and test-and-clear of one bit in raw memory, with OSAtomic's bit numbering:
// bit n is the mask 0x80 >> (n & 7) of the byte at address + (n >> 3). The operation is a
// byte-wide atomic RMW, so it needs no alignment and never touches neighbouring bytes.

import CInterlock

/// Atomically sets bit `bit` of the memory at `address`, numbered as Apple's
/// `OSAtomicTestAndSet`: bit `n` is the mask `0x80 >> (n & 7)` of byte `n >> 3`, so on a
/// zeroed little-endian `Int32`, bit 0 makes 128, bit 7 makes 1 and bit 15 makes 256.
///
/// - Parameters:
///   - bit: the bit number, from 0; the caller guarantees byte `bit >> 3` is addressable.
///   - address: the start of the bit string.
///   - ordering: any ordering; `.sequentiallyConsistent` is OSAtomic's Barrier form.
/// - Returns: the bit's previous state.
/// - Warning: a negative `bit` traps.
@inlinable @inline(__always)
public func atomicTestAndSet(
    _ bit: Int, _ address: UnsafeMutableRawPointer, ordering: MemoryOrder = .sequentiallyConsistent
) -> Bool {
    if _slowPath(bit < 0) { _interlockNegativeBit(bit, "atomicTestAndSet(_:_:ordering:)") }
    return ilk_atomic_test_and_set_bit(bit, address, ordering._cValue)
}

/// Atomically clears bit `bit` of the memory at `address`, numbered as Apple's
/// `OSAtomicTestAndClear` (see ``atomicTestAndSet(_:_:ordering:)``).
/// - Returns: the bit's previous state.
/// - Warning: a negative `bit` traps.
@inlinable @inline(__always)
public func atomicTestAndClear(
    _ bit: Int, _ address: UnsafeMutableRawPointer, ordering: MemoryOrder = .sequentiallyConsistent
) -> Bool {
    if _slowPath(bit < 0) { _interlockNegativeBit(bit, "atomicTestAndClear(_:_:ordering:)") }
    return ilk_atomic_test_and_clear_bit(bit, address, ordering._cValue)
}

@usableFromInline @inline(never)
internal func _interlockNegativeBit(_ bit: Int, _ operation: StaticString) -> Never {
    fatalError("\(operation): bit index \(bit) is negative")
}
