// The C shim's ilk_atomic_* families, called directly: for every integer suffix (i8 u8 i32
// u32 i64 u64 iptr uptr) load, store, exchange, strong CAS, weak CAS in a loop, CAS returning
// the value found, fetch_OP returning the ORIGINAL value and OP_fetch the NEW one (wrapping),
// under every C11 order valid for the operation; then the raw-pointer family.

import CInterlock
import Testing

/// C11 orders as the shim takes them.
let cLoadOrders: [Int32] = [ILK_ORDER_RELAXED, ILK_ORDER_ACQUIRE, ILK_ORDER_SEQ_CST]
let cStoreOrders: [Int32] = [ILK_ORDER_RELAXED, ILK_ORDER_RELEASE, ILK_ORDER_SEQ_CST]
let cAllOrders: [Int32] = [
    ILK_ORDER_RELAXED, ILK_ORDER_ACQUIRE, ILK_ORDER_RELEASE, ILK_ORDER_ACQ_REL, ILK_ORDER_SEQ_CST,
]
/// (success, failure) pairs valid for compare-and-swap (C11 7.17.7.4).
let cCASOrders: [(Int32, Int32)] = [
    (ILK_ORDER_RELAXED, ILK_ORDER_RELAXED), (ILK_ORDER_ACQUIRE, ILK_ORDER_ACQUIRE),
    (ILK_ORDER_RELEASE, ILK_ORDER_RELAXED), (ILK_ORDER_ACQ_REL, ILK_ORDER_ACQUIRE),
    (ILK_ORDER_SEQ_CST, ILK_ORDER_SEQ_CST), (ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED),
]

/// One ilk_atomic_*_S family, as function values, so one generic check covers every suffix.
private struct CAtomicFamily<T: FixedWidthInteger>: Sendable {
    typealias RMW = @Sendable (UnsafeMutablePointer<T>?, T, Int32) -> T
    let load: @Sendable (UnsafePointer<T>?, Int32) -> T
    let store: @Sendable (UnsafeMutablePointer<T>?, T, Int32) -> Void
    let exchange: RMW
    let casStrong: @Sendable (UnsafeMutablePointer<T>?, UnsafeMutablePointer<T>?, T, Int32, Int32) -> Bool
    let casWeak: @Sendable (UnsafeMutablePointer<T>?, UnsafeMutablePointer<T>?, T, Int32, Int32) -> Bool
    let casValue: @Sendable (UnsafeMutablePointer<T>?, T, T, Int32, Int32) -> T
    let fetchAdd: RMW, addFetch: RMW
    let fetchSub: RMW, subFetch: RMW
    let fetchOr: RMW, orFetch: RMW
    let fetchAnd: RMW, andFetch: RMW
    let fetchXor: RMW, xorFetch: RMW
}

enum CAtomicSuffix: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case i8, u8, i32, u32, i64, u64, iptr, uptr
    var testDescription: String { "ilk_atomic_*_\(rawValue)" }

    func check() {
        switch self {
        case .i8:
            checkFamily(
                CAtomicFamily<Int8>(
                    load: ilk_atomic_load_i8, store: ilk_atomic_store_i8, exchange: ilk_atomic_exchange_i8,
                    casStrong: ilk_atomic_cas_strong_i8, casWeak: ilk_atomic_cas_weak_i8,
                    casValue: ilk_atomic_cas_value_i8,
                    fetchAdd: ilk_atomic_fetch_add_i8, addFetch: ilk_atomic_add_fetch_i8,
                    fetchSub: ilk_atomic_fetch_sub_i8, subFetch: ilk_atomic_sub_fetch_i8,
                    fetchOr: ilk_atomic_fetch_or_i8, orFetch: ilk_atomic_or_fetch_i8,
                    fetchAnd: ilk_atomic_fetch_and_i8, andFetch: ilk_atomic_and_fetch_i8,
                    fetchXor: ilk_atomic_fetch_xor_i8, xorFetch: ilk_atomic_xor_fetch_i8))
        case .u8:
            checkFamily(
                CAtomicFamily<UInt8>(
                    load: ilk_atomic_load_u8, store: ilk_atomic_store_u8, exchange: ilk_atomic_exchange_u8,
                    casStrong: ilk_atomic_cas_strong_u8, casWeak: ilk_atomic_cas_weak_u8,
                    casValue: ilk_atomic_cas_value_u8,
                    fetchAdd: ilk_atomic_fetch_add_u8, addFetch: ilk_atomic_add_fetch_u8,
                    fetchSub: ilk_atomic_fetch_sub_u8, subFetch: ilk_atomic_sub_fetch_u8,
                    fetchOr: ilk_atomic_fetch_or_u8, orFetch: ilk_atomic_or_fetch_u8,
                    fetchAnd: ilk_atomic_fetch_and_u8, andFetch: ilk_atomic_and_fetch_u8,
                    fetchXor: ilk_atomic_fetch_xor_u8, xorFetch: ilk_atomic_xor_fetch_u8))
        case .i32:
            checkFamily(
                CAtomicFamily<Int32>(
                    load: ilk_atomic_load_i32, store: ilk_atomic_store_i32, exchange: ilk_atomic_exchange_i32,
                    casStrong: ilk_atomic_cas_strong_i32, casWeak: ilk_atomic_cas_weak_i32,
                    casValue: ilk_atomic_cas_value_i32,
                    fetchAdd: ilk_atomic_fetch_add_i32, addFetch: ilk_atomic_add_fetch_i32,
                    fetchSub: ilk_atomic_fetch_sub_i32, subFetch: ilk_atomic_sub_fetch_i32,
                    fetchOr: ilk_atomic_fetch_or_i32, orFetch: ilk_atomic_or_fetch_i32,
                    fetchAnd: ilk_atomic_fetch_and_i32, andFetch: ilk_atomic_and_fetch_i32,
                    fetchXor: ilk_atomic_fetch_xor_i32, xorFetch: ilk_atomic_xor_fetch_i32))
        case .u32:
            checkFamily(
                CAtomicFamily<UInt32>(
                    load: ilk_atomic_load_u32, store: ilk_atomic_store_u32, exchange: ilk_atomic_exchange_u32,
                    casStrong: ilk_atomic_cas_strong_u32, casWeak: ilk_atomic_cas_weak_u32,
                    casValue: ilk_atomic_cas_value_u32,
                    fetchAdd: ilk_atomic_fetch_add_u32, addFetch: ilk_atomic_add_fetch_u32,
                    fetchSub: ilk_atomic_fetch_sub_u32, subFetch: ilk_atomic_sub_fetch_u32,
                    fetchOr: ilk_atomic_fetch_or_u32, orFetch: ilk_atomic_or_fetch_u32,
                    fetchAnd: ilk_atomic_fetch_and_u32, andFetch: ilk_atomic_and_fetch_u32,
                    fetchXor: ilk_atomic_fetch_xor_u32, xorFetch: ilk_atomic_xor_fetch_u32))
        case .i64:
            checkFamily(
                CAtomicFamily<Int64>(
                    load: ilk_atomic_load_i64, store: ilk_atomic_store_i64, exchange: ilk_atomic_exchange_i64,
                    casStrong: ilk_atomic_cas_strong_i64, casWeak: ilk_atomic_cas_weak_i64,
                    casValue: ilk_atomic_cas_value_i64,
                    fetchAdd: ilk_atomic_fetch_add_i64, addFetch: ilk_atomic_add_fetch_i64,
                    fetchSub: ilk_atomic_fetch_sub_i64, subFetch: ilk_atomic_sub_fetch_i64,
                    fetchOr: ilk_atomic_fetch_or_i64, orFetch: ilk_atomic_or_fetch_i64,
                    fetchAnd: ilk_atomic_fetch_and_i64, andFetch: ilk_atomic_and_fetch_i64,
                    fetchXor: ilk_atomic_fetch_xor_i64, xorFetch: ilk_atomic_xor_fetch_i64))
        case .u64:
            checkFamily(
                CAtomicFamily<UInt64>(
                    load: ilk_atomic_load_u64, store: ilk_atomic_store_u64, exchange: ilk_atomic_exchange_u64,
                    casStrong: ilk_atomic_cas_strong_u64, casWeak: ilk_atomic_cas_weak_u64,
                    casValue: ilk_atomic_cas_value_u64,
                    fetchAdd: ilk_atomic_fetch_add_u64, addFetch: ilk_atomic_add_fetch_u64,
                    fetchSub: ilk_atomic_fetch_sub_u64, subFetch: ilk_atomic_sub_fetch_u64,
                    fetchOr: ilk_atomic_fetch_or_u64, orFetch: ilk_atomic_or_fetch_u64,
                    fetchAnd: ilk_atomic_fetch_and_u64, andFetch: ilk_atomic_and_fetch_u64,
                    fetchXor: ilk_atomic_fetch_xor_u64, xorFetch: ilk_atomic_xor_fetch_u64))
        case .iptr:
            checkFamily(
                CAtomicFamily<Int>(
                    load: ilk_atomic_load_iptr, store: ilk_atomic_store_iptr, exchange: ilk_atomic_exchange_iptr,
                    casStrong: ilk_atomic_cas_strong_iptr, casWeak: ilk_atomic_cas_weak_iptr,
                    casValue: ilk_atomic_cas_value_iptr,
                    fetchAdd: ilk_atomic_fetch_add_iptr, addFetch: ilk_atomic_add_fetch_iptr,
                    fetchSub: ilk_atomic_fetch_sub_iptr, subFetch: ilk_atomic_sub_fetch_iptr,
                    fetchOr: ilk_atomic_fetch_or_iptr, orFetch: ilk_atomic_or_fetch_iptr,
                    fetchAnd: ilk_atomic_fetch_and_iptr, andFetch: ilk_atomic_and_fetch_iptr,
                    fetchXor: ilk_atomic_fetch_xor_iptr, xorFetch: ilk_atomic_xor_fetch_iptr))
        case .uptr:
            checkFamily(
                CAtomicFamily<UInt>(
                    load: ilk_atomic_load_uptr, store: ilk_atomic_store_uptr, exchange: ilk_atomic_exchange_uptr,
                    casStrong: ilk_atomic_cas_strong_uptr, casWeak: ilk_atomic_cas_weak_uptr,
                    casValue: ilk_atomic_cas_value_uptr,
                    fetchAdd: ilk_atomic_fetch_add_uptr, addFetch: ilk_atomic_add_fetch_uptr,
                    fetchSub: ilk_atomic_fetch_sub_uptr, subFetch: ilk_atomic_sub_fetch_uptr,
                    fetchOr: ilk_atomic_fetch_or_uptr, orFetch: ilk_atomic_or_fetch_uptr,
                    fetchAnd: ilk_atomic_fetch_and_uptr, andFetch: ilk_atomic_and_fetch_uptr,
                    fetchXor: ilk_atomic_fetch_xor_uptr, xorFetch: ilk_atomic_xor_fetch_uptr))
        }
    }
}

@Suite("C shim: ilk_atomic_* families")
struct ShimAtomicTests {
    @Test(
        "load, store, exchange, CAS (strong, weak, value), fetch_OP and OP_fetch",
        arguments: CAtomicSuffix.allCases)
    func integerFamily(suffix: CAtomicSuffix) {
        suffix.check()
    }

    @Test("raw pointers: load, store, exchange, strong and weak CAS, CAS returning the value")
    func pointerFamily() {
        let a = UnsafeMutableRawPointer(bitPattern: 0x1000)!
        let b = UnsafeMutableRawPointer(bitPattern: 0x2000)!
        let c = UnsafeMutableRawPointer(bitPattern: 0x3000)!
        let cell = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
        defer { cell.deallocate() }
        cell.initialize(to: a)
        for order in cLoadOrders { #expect(ilk_atomic_load_ptr(cell, order) == a) }
        for order in cStoreOrders {
            ilk_atomic_store_ptr(cell, b, order)
            #expect(cell.pointee == b)
            ilk_atomic_store_ptr(cell, nil, order)
            #expect(ilk_atomic_load_ptr(cell, ILK_ORDER_SEQ_CST) == nil)
            ilk_atomic_store_ptr(cell, a, order)
        }
        for order in cAllOrders {
            #expect(ilk_atomic_exchange_ptr(cell, b, order) == a, "exchange returns the old pointer")
            #expect(ilk_atomic_exchange_ptr(cell, a, order) == b)
        }
        for (success, failure) in cCASOrders {
            var expected: UnsafeMutableRawPointer? = c
            #expect(ilk_atomic_cas_strong_ptr(cell, &expected, b, success, failure) == false)
            #expect(expected == a, "a failed CAS writes back the pointer found")
            #expect(cell.pointee == a)
            #expect(ilk_atomic_cas_strong_ptr(cell, &expected, b, success, failure) == true)
            #expect(expected == a, "a successful CAS leaves expected alone")
            #expect(cell.pointee == b)

            var attempts = 0
            expected = b
            while !ilk_atomic_cas_weak_ptr(cell, &expected, a, success, failure) {
                #expect(expected == b, "a spurious weak-CAS failure reports the unchanged value")
                attempts += 1
                if attempts > 1_000_000 { break }
            }
            #expect(cell.pointee == a, "weak CAS succeeds within a loop")
            expected = c
            #expect(ilk_atomic_cas_weak_ptr(cell, &expected, b, success, failure) == false)
            #expect(expected == a)

            #expect(ilk_atomic_cas_value_ptr(cell, c, b, success, failure) == a, "miss: value found")
            #expect(cell.pointee == a)
            #expect(ilk_atomic_cas_value_ptr(cell, a, b, success, failure) == a, "hit: value found")
            #expect(cell.pointee == b)
            cell.pointee = a
        }
    }
}

private func checkFamily<T: FixedWidthInteger>(_ f: CAtomicFamily<T>) {
    let p = UnsafeMutablePointer<T>.allocate(capacity: 1)
    defer { p.deallocate() }
    p.initialize(to: T.pattern)

    for order in cLoadOrders { #expect(f.load(p, order) == T.pattern, "load, order \(order)") }
    for order in cStoreOrders {
        f.store(p, T.otherPattern, order)
        #expect(p.pointee == T.otherPattern, "store, order \(order)")
        f.store(p, T.pattern, order)
        #expect(f.load(p, ILK_ORDER_SEQ_CST) == T.pattern)
    }
    for order in cAllOrders {
        #expect(f.exchange(p, T.otherPattern, order) == T.pattern, "exchange returns the old value")
        #expect(f.exchange(p, T.pattern, order) == T.otherPattern)
        #expect(p.pointee == T.pattern)
    }

    for (success, failure) in cCASOrders {
        p.pointee = T.pattern
        var expected = T.otherPattern
        #expect(f.casStrong(p, &expected, T.max, success, failure) == false)
        #expect(expected == T.pattern, "a failed strong CAS writes back the value found")
        #expect(p.pointee == T.pattern)
        #expect(f.casStrong(p, &expected, T.max, success, failure) == true)
        #expect(expected == T.pattern, "a successful strong CAS leaves expected alone")
        #expect(p.pointee == T.max)

        // Weak CAS may fail spuriously: a loop must get there, reporting the value each time.
        var attempts = 0
        expected = T.max
        while !f.casWeak(p, &expected, T.min, success, failure) {
            #expect(expected == T.max, "a spurious weak-CAS failure reports the unchanged value")
            attempts += 1
            if attempts > 1_000_000 { break }
        }
        #expect(p.pointee == T.min, "weak CAS succeeds within a loop")
        expected = T.max
        #expect(f.casWeak(p, &expected, 0, success, failure) == false, "a real mismatch always fails")
        #expect(expected == T.min)

        #expect(f.casValue(p, T.max, 7, success, failure) == T.min, "miss returns the value found")
        #expect(p.pointee == T.min)
        #expect(f.casValue(p, T.min, 7, success, failure) == T.min, "hit returns the expected value")
        #expect(p.pointee == 7)
    }

    for order in cAllOrders {
        // fetch_OP returns the ORIGINAL value; OP_fetch the NEW one. Arithmetic wraps.
        p.pointee = T.max
        #expect(f.fetchAdd(p, 1, order) == T.max)
        #expect(p.pointee == T.min, "fetch_add wraps")
        #expect(f.addFetch(p, T.pattern, order) == T.min &+ T.pattern)
        #expect(p.pointee == T.min &+ T.pattern)

        p.pointee = T.min
        #expect(f.fetchSub(p, 1, order) == T.min)
        #expect(p.pointee == T.max, "fetch_sub wraps")
        #expect(f.subFetch(p, T.pattern, order) == T.max &- T.pattern)

        p.pointee = T.pattern
        #expect(f.fetchOr(p, T.otherPattern, order) == T.pattern)
        #expect(p.pointee == T.pattern | T.otherPattern)
        #expect(f.orFetch(p, 1, order) == T.pattern | T.otherPattern | 1)

        p.pointee = T.pattern
        #expect(f.fetchAnd(p, T.otherPattern, order) == T.pattern)
        #expect(p.pointee == T.pattern & T.otherPattern)
        #expect(f.andFetch(p, ~T.zero << 1, order) == (T.pattern & T.otherPattern) & (~T.zero << 1))

        p.pointee = T.pattern
        #expect(f.fetchXor(p, T.otherPattern, order) == T.pattern)
        #expect(p.pointee == T.pattern ^ T.otherPattern)
        #expect(f.xorFetch(p, T.otherPattern, order) == T.pattern)
        #expect(p.pointee == T.pattern)
    }
}
