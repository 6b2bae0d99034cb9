// atomicTestAndSet / atomicTestAndClear on raw memory, with OSAtomic's bit numbering:
// bit n is the mask 0x80 >> (n & 7) of byte n >> 3, so on a zeroed little-endian Int32
// bit 0 makes 128, bit 7 makes 1 and bit 15 makes 256. Checked byte by byte over a whole
// buffer, and mixed with compare-and-swap on the same memory (AtomicInt32 and the C shim).

import CInterlock
import Interlock
import Testing

/// A zero-filled, 16-byte aligned buffer that a test owns for its duration.
private final class RawBuffer {
    let count: Int
    let base: UnsafeMutableRawPointer

    init(bytes count: Int, filledWith byte: UInt8 = 0) {
        self.count = count
        base = .allocate(byteCount: count, alignment: 16)
        base.initializeMemory(as: UInt8.self, repeating: byte, count: count)
    }

    deinit { base.deallocate() }

    var bytes: [UInt8] { Array(UnsafeRawBufferPointer(start: base, count: count)) }

    var int32: Int32 { base.load(as: Int32.self) }
}

@Suite("atomicTestAndSet / atomicTestAndClear: OSAtomic bit numbering on raw memory")
struct AtomicRawBitsTests {
    @Test(
        "on a zeroed Int32: bit 0 makes 128, bit 7 makes 1, bit 15 makes 256",
        arguments: [(0, Int32(128)), (7, 1), (15, 256), (8, 0x8000), (24, Int32.min), (31, 0x0100_0000)])
    func osAtomicNumbering(bit: Int, value: Int32) {
        let buffer = RawBuffer(bytes: 4)
        #expect(atomicTestAndSet(bit, buffer.base) == false)
        #expect(buffer.int32 == value, "bit \(bit) on a zeroed little-endian Int32")
        #expect(atomicTestAndSet(bit, buffer.base) == true)
        #expect(atomicTestAndClear(bit, buffer.base) == true)
        #expect(buffer.int32 == 0)
        #expect(atomicTestAndClear(bit, buffer.base) == false)
    }

    @Test("bit 15 then compare-and-swap 256→512 succeeds, 256→1024 fails leaving 512 (Swift CAS)")
    func bitThenSwiftCompareAndSwap() {
        // The value the raw bit operation produced, carried on by an AtomicInt32 (the next
        // test does the compare-and-swap on the very same memory with the C shim).
        let buffer = RawBuffer(bytes: 4)
        #expect(atomicTestAndSet(15, buffer.base) == false)
        let word = AtomicInt32(buffer.int32)
        #expect(word.load() == 256)
        #expect(word.compareAndSwap(256, 512) == true)
        #expect(word.compareAndSwap(256, 1024) == false)
        #expect(word.load() == 512)
    }

    @Test("bit 15 then compare-and-swap 256→512 succeeds, 256→1024 fails leaving 512 (C CAS on the same memory)")
    func bitThenCCompareAndSwap() {
        let buffer = RawBuffer(bytes: 4)
        #expect(atomicTestAndSet(15, buffer.base) == false)
        let int32 = buffer.base.assumingMemoryBound(to: Int32.self)
        #expect(ilk_osatomic_cas32_barrier(256, 512, int32) == true)
        #expect(ilk_osatomic_cas32_barrier(256, 1024, int32) == false)
        #expect(buffer.int32 == 512)
        // And bit 14 of 512 (0x0200) is the one now set: OSAtomic bit 14 = byte 1, mask 0x02.
        #expect(atomicTestAndClear(14, buffer.base) == true)
        #expect(buffer.int32 == 0)
    }

    @Test("bit 40 of a 16-byte buffer touches byte 5 only")
    func bitBeyondFirstWord() {
        let buffer = RawBuffer(bytes: 16)
        #expect(atomicTestAndSet(40, buffer.base) == false)
        var expected = [UInt8](repeating: 0, count: 16)
        expected[5] = 0x80
        #expect(buffer.bytes == expected)
        #expect(atomicTestAndClear(40, buffer.base) == true)
        #expect(buffer.bytes == [UInt8](repeating: 0, count: 16))
    }

    @Test(
        "every bit of a 16-byte buffer sets exactly byte n >> 3, mask 0x80 >> (n & 7)",
        arguments: allOrders)
    func everyBitSet(order: MemoryOrder) {
        let buffer = RawBuffer(bytes: 16)
        for bit in 0..<128 {
            var expected = [UInt8](repeating: 0, count: 16)
            expected[bit >> 3] = 0x80 >> UInt8(bit & 7)
            #expect(atomicTestAndSet(bit, buffer.base, ordering: order) == false, "bit \(bit) was clear")
            #expect(buffer.bytes == expected, "bit \(bit)")
            #expect(atomicTestAndSet(bit, buffer.base, ordering: order) == true, "bit \(bit) was set")
            #expect(atomicTestAndClear(bit, buffer.base, ordering: order) == true, "bit \(bit) was set")
            #expect(buffer.bytes == [UInt8](repeating: 0, count: 16))
        }
    }

    @Test("every bit of an all-ones 16-byte buffer clears exactly its own bit", arguments: allOrders)
    func everyBitClear(order: MemoryOrder) {
        let buffer = RawBuffer(bytes: 16, filledWith: 0xFF)
        for bit in 0..<128 {
            var expected = [UInt8](repeating: 0xFF, count: 16)
            expected[bit >> 3] = ~(0x80 >> UInt8(bit & 7))
            #expect(atomicTestAndClear(bit, buffer.base, ordering: order) == true, "bit \(bit) was set")
            #expect(buffer.bytes == expected, "bit \(bit)")
            #expect(atomicTestAndClear(bit, buffer.base, ordering: order) == false, "bit \(bit) was clear")
            #expect(atomicTestAndSet(bit, buffer.base, ordering: order) == false, "bit \(bit) was clear")
            #expect(buffer.bytes == [UInt8](repeating: 0xFF, count: 16))
        }
    }

    @Test("setting bits accumulates: 0, 7 and 15 together make 0x181 on a zeroed Int32")
    func accumulate() {
        let buffer = RawBuffer(bytes: 4)
        for bit in [0, 7, 15] { #expect(atomicTestAndSet(bit, buffer.base) == false) }
        #expect(buffer.int32 == 128 + 1 + 256)
        #expect(atomicTestAndClear(7, buffer.base) == true)
        #expect(buffer.int32 == 128 + 256)
    }

    @Test("unaligned address: the bit string may start at any byte")
    func unaligned() {
        let buffer = RawBuffer(bytes: 8)
        #expect(atomicTestAndSet(3, buffer.base + 3) == false)
        #expect(buffer.bytes == [0, 0, 0, 0x10, 0, 0, 0, 0])
    }
}
