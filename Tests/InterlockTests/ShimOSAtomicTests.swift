// The C shim's OSAtomic table (ilk_osatomic_*), barrier and barrier-free: Add, Increment,
// Decrement, Or, And, Xor return the NEW value, the _orig forms the ORIGINAL one,
// CompareAndSwap a bool (32, 64 and pointer), TestAndSet/TestAndClear the old bit with
// OSAtomic's bit numbering (bit n is mask 0x80 >> (n & 7) of byte n >> 3).

import CInterlock
import Testing

/// One ilk_osatomic family (a width, barrier or not) as function values.
private struct OSAtomicFamily<T: FixedWidthInteger & SignedInteger>: Sendable {
    typealias Op = @Sendable (T, UnsafeMutablePointer<T>?) -> T
    let add: Op
    let increment: @Sendable (UnsafeMutablePointer<T>?) -> T
    let decrement: @Sendable (UnsafeMutablePointer<T>?) -> T
    let or: Op, and: Op, xor: Op
    let orOrig: Op, andOrig: Op, xorOrig: Op
    let cas: @Sendable (T, T, UnsafeMutablePointer<T>?) -> Bool
}

enum OSAtomicVariant: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case w32, w32Barrier, w64, w64Barrier
    var testDescription: String {
        switch self {
        case .w32: "ilk_osatomic_*32"
        case .w32Barrier: "ilk_osatomic_*32_barrier"
        case .w64: "ilk_osatomic_*64"
        case .w64Barrier: "ilk_osatomic_*64_barrier"
        }
    }

    func check() {
        switch self {
        case .w32:
            checkOSAtomic(
                OSAtomicFamily<Int32>(
                    add: ilk_osatomic_add32, increment: ilk_osatomic_increment32,
                    decrement: ilk_osatomic_decrement32,
                    or: ilk_osatomic_or32, and: ilk_osatomic_and32, xor: ilk_osatomic_xor32,
                    orOrig: ilk_osatomic_or32_orig, andOrig: ilk_osatomic_and32_orig,
                    xorOrig: ilk_osatomic_xor32_orig, cas: ilk_osatomic_cas32))
        case .w32Barrier:
            checkOSAtomic(
                OSAtomicFamily<Int32>(
                    add: ilk_osatomic_add32_barrier, increment: ilk_osatomic_increment32_barrier,
                    decrement: ilk_osatomic_decrement32_barrier,
                    or: ilk_osatomic_or32_barrier, and: ilk_osatomic_and32_barrier,
                    xor: ilk_osatomic_xor32_barrier,
                    orOrig: ilk_osatomic_or32_orig_barrier, andOrig: ilk_osatomic_and32_orig_barrier,
                    xorOrig: ilk_osatomic_xor32_orig_barrier, cas: ilk_osatomic_cas32_barrier))
        case .w64:
            checkOSAtomic(
                OSAtomicFamily<Int64>(
                    add: ilk_osatomic_add64, increment: ilk_osatomic_increment64,
                    decrement: ilk_osatomic_decrement64,
                    or: ilk_osatomic_or64, and: ilk_osatomic_and64, xor: ilk_osatomic_xor64,
                    orOrig: ilk_osatomic_or64_orig, andOrig: ilk_osatomic_and64_orig,
                    xorOrig: ilk_osatomic_xor64_orig, cas: ilk_osatomic_cas64))
        case .w64Barrier:
            checkOSAtomic(
                OSAtomicFamily<Int64>(
                    add: ilk_osatomic_add64_barrier, increment: ilk_osatomic_increment64_barrier,
                    decrement: ilk_osatomic_decrement64_barrier,
                    or: ilk_osatomic_or64_barrier, and: ilk_osatomic_and64_barrier,
                    xor: ilk_osatomic_xor64_barrier,
                    orOrig: ilk_osatomic_or64_orig_barrier, andOrig: ilk_osatomic_and64_orig_barrier,
                    xorOrig: ilk_osatomic_xor64_orig_barrier, cas: ilk_osatomic_cas64_barrier))
        }
    }
}

private func checkOSAtomic<T: FixedWidthInteger & SignedInteger>(_ f: OSAtomicFamily<T>) {
    let p = UnsafeMutablePointer<T>.allocate(capacity: 1)
    defer { p.deallocate() }
    p.initialize(to: 10)

    #expect(f.add(5, p) == 15, "Add returns the new value")
    #expect(f.add(-20, p) == -5, "Add of a negative amount subtracts")
    #expect(f.increment(p) == -4)
    #expect(f.decrement(p) == -5)
    #expect(p.pointee == -5)
    p.pointee = T.max
    #expect(f.increment(p) == T.min, "Increment wraps")
    #expect(f.decrement(p) == T.max, "Decrement wraps")
    #expect(f.add(T.max, p) == T.max &+ T.max)

    p.pointee = T.pattern
    #expect(f.or(T.otherPattern, p) == T.pattern | T.otherPattern, "Or returns the new value")
    p.pointee = T.pattern
    #expect(f.and(T.otherPattern, p) == T.pattern & T.otherPattern, "And returns the new value")
    p.pointee = T.pattern
    #expect(f.xor(T.otherPattern, p) == T.pattern ^ T.otherPattern, "Xor returns the new value")

    p.pointee = T.pattern
    #expect(f.orOrig(T.otherPattern, p) == T.pattern, "OrOrig returns the original value")
    #expect(p.pointee == T.pattern | T.otherPattern)
    p.pointee = T.pattern
    #expect(f.andOrig(T.otherPattern, p) == T.pattern, "AndOrig returns the original value")
    #expect(p.pointee == T.pattern & T.otherPattern)
    p.pointee = T.pattern
    #expect(f.xorOrig(T.otherPattern, p) == T.pattern, "XorOrig returns the original value")
    #expect(p.pointee == T.pattern ^ T.otherPattern)

    p.pointee = 256
    #expect(f.cas(256, 512, p) == true)
    #expect(f.cas(256, 1024, p) == false)
    #expect(p.pointee == 512)
    #expect(f.cas(T.min, 0, p) == false, "values differing in the top bit do not compare equal")
    #expect(p.pointee == 512)
}

@Suite("C shim: the OSAtomic table")
struct ShimOSAtomicTests {
    @Test(
        "Add, Increment, Decrement, Or, And, Xor (new value), *Orig (original), CompareAndSwap",
        arguments: OSAtomicVariant.allCases)
    func family(variant: OSAtomicVariant) {
        variant.check()
    }

    @Test("CompareAndSwapPtr, barrier and barrier-free")
    func compareAndSwapPointer() {
        let a = UnsafeMutableRawPointer(bitPattern: 0xA0)!
        let b = UnsafeMutableRawPointer(bitPattern: 0xB0)!
        var cell: UnsafeMutableRawPointer? = a
        #expect(ilk_osatomic_casptr(b, a, &cell) == false)
        #expect(cell == a)
        #expect(ilk_osatomic_casptr(a, b, &cell) == true)
        #expect(cell == b)
        #expect(ilk_osatomic_casptr_barrier(a, nil, &cell) == false)
        #expect(ilk_osatomic_casptr_barrier(b, nil, &cell) == true)
        #expect(cell == nil)
        #expect(ilk_osatomic_casptr_barrier(nil, a, &cell) == true)
        #expect(cell == a)
    }

    @Test("TestAndSet/TestAndClear: on a zeroed Int32 bit 0 → 128, bit 7 → 1, bit 15 → 256; then CAS 256→512")
    func testAndSetNumbering() {
        var word: Int32 = 0
        #expect(ilk_osatomic_test_and_set(0, &word) == false)
        #expect(word == 128)
        #expect(ilk_osatomic_test_and_set(0, &word) == true)
        #expect(ilk_osatomic_test_and_clear(0, &word) == true)
        #expect(ilk_osatomic_test_and_clear(0, &word) == false)
        #expect(word == 0)
        #expect(ilk_osatomic_test_and_set_barrier(7, &word) == false)
        #expect(word == 1)
        #expect(ilk_osatomic_test_and_clear_barrier(7, &word) == true)
        #expect(word == 0)
        #expect(ilk_osatomic_test_and_set_barrier(15, &word) == false)
        #expect(word == 256)
        #expect(ilk_osatomic_cas32_barrier(256, 512, &word) == true)
        #expect(ilk_osatomic_cas32_barrier(256, 1024, &word) == false)
        #expect(word == 512)
        #expect(ilk_osatomic_test_and_clear_barrier(14, &word) == true, "512 is OSAtomic bit 14")
        #expect(word == 0)
    }

    @Test("TestAndSet beyond the first word: bit 40 of 16 bytes touches byte 5 only")
    func testAndSetFarBit() {
        var bytes = [UInt8](repeating: 0, count: 16)
        let old = bytes.withUnsafeMutableBytes { ilk_osatomic_test_and_set_barrier(40, $0.baseAddress) }
        #expect(old == false)
        var expected = [UInt8](repeating: 0, count: 16)
        expected[5] = 0x80
        #expect(bytes == expected)
        let cleared = bytes.withUnsafeMutableBytes {
            ilk_atomic_test_and_clear_bit(40, $0.baseAddress, ILK_ORDER_RELAXED)
        }
        #expect(cleared == true)
        #expect(bytes == [UInt8](repeating: 0, count: 16))
    }
}
