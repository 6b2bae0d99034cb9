// The integer types an AtomicInteger can hold, and the two machine words they map onto.
//
// Every atomic integer is stored as a 32- or 64-bit unsigned word; the value type is a bit
// pattern view of it. The conversions are `truncatingIfNeeded` between types of equal width,
// so they compile to nothing, and each operation is one C11 builtin on the word. Wrapping
// arithmetic on the unsigned word is the same bit pattern as wrapping arithmetic on the
// signed value (two's complement), which is what "wraps on overflow, as in C" asks.

// The `_`-prefixed public witnesses and typealiases below are implementation details that public
// inlinable code must see, not API: they stay out of the docs, and so without doc comments.
// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

import CInterlock

/// A machine word the shim can operate on atomically. Implementation detail of
/// ``AtomicIntegerValue``; not meant to be used directly.
public protocol _AtomicStorageWord: FixedWidthInteger, UnsignedInteger, Sendable {
    static func _atomicLoad(_ p: UnsafeMutablePointer<Self>, _ order: Int32) -> Self
    static func _atomicStore(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32)
    static func _atomicExchange(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self
    /// Strong compare-and-swap; returns the value found (it swapped iff that is `expected`).
    static func _atomicCompareExchange(
        _ p: UnsafeMutablePointer<Self>, _ expected: Self, _ desired: Self,
        _ success: Int32, _ failure: Int32
    ) -> Self
    static func _atomicFetchAdd(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self
    static func _atomicFetchSub(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self
    static func _atomicFetchOr(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self
    static func _atomicFetchAnd(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self
    static func _atomicFetchXor(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self
}

extension UInt32: _AtomicStorageWord {
    @inlinable @inline(__always)
    public static func _atomicLoad(_ p: UnsafeMutablePointer<Self>, _ order: Int32) -> Self {
        ilk_atomic_load_u32(p, order)
    }
    @inlinable @inline(__always)
    public static func _atomicStore(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) {
        ilk_atomic_store_u32(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicExchange(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_exchange_u32(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicCompareExchange(
        _ p: UnsafeMutablePointer<Self>, _ expected: Self, _ desired: Self,
        _ success: Int32, _ failure: Int32
    ) -> Self {
        ilk_atomic_cas_value_u32(p, expected, desired, success, failure)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchAdd(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_add_u32(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchSub(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_sub_u32(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchOr(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_or_u32(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchAnd(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_and_u32(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchXor(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_xor_u32(p, v, order)
    }
}

extension UInt64: _AtomicStorageWord {
    @inlinable @inline(__always)
    public static func _atomicLoad(_ p: UnsafeMutablePointer<Self>, _ order: Int32) -> Self {
        ilk_atomic_load_u64(p, order)
    }
    @inlinable @inline(__always)
    public static func _atomicStore(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) {
        ilk_atomic_store_u64(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicExchange(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_exchange_u64(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicCompareExchange(
        _ p: UnsafeMutablePointer<Self>, _ expected: Self, _ desired: Self,
        _ success: Int32, _ failure: Int32
    ) -> Self {
        ilk_atomic_cas_value_u64(p, expected, desired, success, failure)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchAdd(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_add_u64(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchSub(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_sub_u64(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchOr(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_or_u64(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchAnd(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_and_u64(p, v, order)
    }
    @inlinable @inline(__always)
    public static func _atomicFetchXor(_ p: UnsafeMutablePointer<Self>, _ v: Self, _ order: Int32) -> Self {
        ilk_atomic_fetch_xor_u64(p, v, order)
    }
}

/// An integer type that ``AtomicInteger`` can hold: `Int32`, `Int64`, `Int`, `UInt32`,
/// `UInt64` and `UInt`.
public protocol AtomicIntegerValue: FixedWidthInteger, Sendable {
    /// The unsigned machine word of the same width that stores the value.
    associatedtype _AtomicWord: _AtomicStorageWord
}

extension AtomicIntegerValue {
    @inlinable @inline(__always)
    internal init(_atomicWord word: _AtomicWord) { self.init(truncatingIfNeeded: word) }

    @inlinable @inline(__always)
    internal var _atomicWord: _AtomicWord { _AtomicWord(truncatingIfNeeded: self) }
}

extension Int32: AtomicIntegerValue { public typealias _AtomicWord = UInt32 }
extension UInt32: AtomicIntegerValue { public typealias _AtomicWord = UInt32 }
extension Int64: AtomicIntegerValue { public typealias _AtomicWord = UInt64 }
extension UInt64: AtomicIntegerValue { public typealias _AtomicWord = UInt64 }
#if _pointerBitWidth(_64)
extension Int: AtomicIntegerValue { public typealias _AtomicWord = UInt64 }
extension UInt: AtomicIntegerValue { public typealias _AtomicWord = UInt64 }
#else
extension Int: AtomicIntegerValue { public typealias _AtomicWord = UInt32 }
extension UInt: AtomicIntegerValue { public typealias _AtomicWord = UInt32 }
#endif
