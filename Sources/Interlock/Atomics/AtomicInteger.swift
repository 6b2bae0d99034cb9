// AtomicInteger: an integer in a class, operated on with C11 atomics.
//
// Layout: the value is the object's only stored property, so it sits at a fixed offset in the
// object's one heap allocation, and a class instance never moves: its address is stable for
// the object's lifetime. Swift code never reads or writes the property after `init`; every
// access goes through its address (`_address`) to a C11 builtin, so Swift's exclusivity
// checking never sees it and no access is a plain load or store.
//
// Cost: every method is `@inlinable` and `@inline(__always)`, the value type's operations are
// static (the generic class is specialized at the call site), and the ordering checks fold to
// nothing for a constant ordering, so an increment from another module compiles to the same
// instruction as the C builtin (`lock xadd` on x86-64), with no retain, release or call.

import CInterlock

/// An integer that threads can read and modify atomically: the heir of Apple's OSAtomic
/// functions (`OSAtomicAdd32Barrier`, `OSAtomicCompareAndSwap64`, `OSAtomicTestAndSet`, ...).
///
/// Use it through its names ``AtomicInt32``, ``AtomicInt64``, ``AtomicInt``, ``AtomicUInt32``
/// and ``AtomicUInt64``. Every operation takes an `ordering:` that defaults to
/// ``MemoryOrder/sequentiallyConsistent`` (OSAtomic's "Barrier" form); pass
/// ``MemoryOrder/relaxed`` for the barrier-free form. Arithmetic wraps on overflow, as in C.
///
/// `add`, `subtract`, `increment`, `decrement` and the bitwise operations return the **new**
/// value, as OSAtomic does; `exchange` and `compareExchange` return the original value, and
/// `testAndSet`/`testAndClear` the bit's previous state.
///
/// - Warning: An ordering that is invalid for the operation (a load with `.release` or
///   `.acquireRelease`, a store with `.acquire` or `.acquireRelease`) and a bit index outside
///   `0..<Value.bitWidth` are programmer errors: they trap with a message.
public final class AtomicInteger<Value: AtomicIntegerValue>: @unchecked Sendable {
    // Read and written only through `_address` once initialized (see the file comment).
    @usableFromInline internal var _storage: Value._AtomicWord

    /// Creates an atomic integer holding `value`.
    @inlinable
    public init(_ value: Value = 0) {
        _storage = value._atomicWord
    }

    /// The address of the stored word: fixed for the object's lifetime.
    @inlinable @inline(__always)
    internal var _address: UnsafeMutablePointer<Value._AtomicWord> {
        // SAFETY: `_storage` is the only stored property of this final class, so it starts at
        // the first stored-property offset; objects never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: Value._AtomicWord.self)
    }

    /// Atomically reads the value.
    /// - Parameter ordering: `.relaxed`, `.acquire` or `.sequentiallyConsistent`.
    /// - Returns: The value.
    @inlinable @inline(__always)
    public func load(ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        ordering._checkLoad(Self.self, "load(ordering:)")
        return Value(_atomicWord: Value._AtomicWord._atomicLoad(_address, ordering._cValue))
    }

    /// Atomically replaces the value.
    /// - Parameters:
    ///   - value: the new value.
    ///   - ordering: `.relaxed`, `.release` or `.sequentiallyConsistent`.
    @inlinable @inline(__always)
    public func store(_ value: Value, ordering: MemoryOrder = .sequentiallyConsistent) {
        ordering._checkStore(Self.self, "store(_:ordering:)")
        Value._AtomicWord._atomicStore(_address, value._atomicWord, ordering._cValue)
    }

    /// Atomically replaces the value and returns the one it replaced.
    @inlinable @inline(__always)
    public func exchange(_ value: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        Value(_atomicWord: Value._AtomicWord._atomicExchange(_address, value._atomicWord, ordering._cValue))
    }

    /// Atomically replaces the value with `desired` if it equals `expected`.
    ///
    /// The comparison is strong: it fails only when the value differs. On failure the
    /// operation is a load with the strongest load ordering implied by `ordering`.
    /// - Returns: whether the exchange happened, and the value found (equal to `expected`
    ///   exactly when it happened).
    @inlinable @inline(__always)
    public func compareExchange(
        expected: Value, desired: Value, ordering: MemoryOrder = .sequentiallyConsistent
    ) -> (exchanged: Bool, original: Value) {
        let word = expected._atomicWord
        let found = Value._AtomicWord._atomicCompareExchange(
            _address, word, desired._atomicWord, ordering._cValue, ordering._casFailureValue)
        return (found == word, Value(_atomicWord: found))
    }

    /// Atomically replaces the value with `new` if it equals `old`
    /// (`OSAtomicCompareAndSwap32Barrier` and relatives).
    /// - Returns: `true` when the value was replaced.
    @inlinable @inline(__always)
    public func compareAndSwap(_ old: Value, _ new: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Bool {
        compareExchange(expected: old, desired: new, ordering: ordering).exchanged
    }

    /// Atomically adds `delta`, wrapping on overflow. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func add(_ delta: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        let word = delta._atomicWord
        return Value(_atomicWord: Value._AtomicWord._atomicFetchAdd(_address, word, ordering._cValue) &+ word)
    }

    /// Atomically subtracts `delta`, wrapping on overflow. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func subtract(_ delta: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        let word = delta._atomicWord
        return Value(_atomicWord: Value._AtomicWord._atomicFetchSub(_address, word, ordering._cValue) &- word)
    }

    /// Atomically adds one, wrapping on overflow. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func increment(ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        add(1, ordering: ordering)
    }

    /// Atomically subtracts one, wrapping on overflow. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func decrement(ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        subtract(1, ordering: ordering)
    }

    /// Atomically ORs `mask` into the value. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func bitwiseOr(_ mask: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        let word = mask._atomicWord
        return Value(_atomicWord: Value._AtomicWord._atomicFetchOr(_address, word, ordering._cValue) | word)
    }

    /// Atomically ANDs `mask` into the value. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func bitwiseAnd(_ mask: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        let word = mask._atomicWord
        return Value(_atomicWord: Value._AtomicWord._atomicFetchAnd(_address, word, ordering._cValue) & word)
    }

    /// Atomically XORs `mask` into the value. - Returns: the **new** value.
    @inlinable @inline(__always) @discardableResult
    public func bitwiseXor(_ mask: Value, ordering: MemoryOrder = .sequentiallyConsistent) -> Value {
        let word = mask._atomicWord
        return Value(_atomicWord: Value._AtomicWord._atomicFetchXor(_address, word, ordering._cValue) ^ word)
    }

    /// Atomically sets one bit; bit 0 is the least significant.
    /// - Returns: the bit's previous state.
    /// - Warning: `bit` outside `0..<Value.bitWidth` traps.
    @inlinable @inline(__always)
    public func testAndSet(bit: Int, ordering: MemoryOrder = .sequentiallyConsistent) -> Bool {
        let mask = _mask(bit, "testAndSet(bit:ordering:)")
        return Value._AtomicWord._atomicFetchOr(_address, mask, ordering._cValue) & mask != 0
    }

    /// Atomically clears one bit; bit 0 is the least significant.
    /// - Returns: the bit's previous state.
    /// - Warning: `bit` outside `0..<Value.bitWidth` traps.
    @inlinable @inline(__always)
    public func testAndClear(bit: Int, ordering: MemoryOrder = .sequentiallyConsistent) -> Bool {
        let mask = _mask(bit, "testAndClear(bit:ordering:)")
        return Value._AtomicWord._atomicFetchAnd(_address, ~mask, ordering._cValue) & mask != 0
    }

    @inlinable @inline(__always)
    internal func _mask(_ bit: Int, _ operation: StaticString) -> Value._AtomicWord {
        if _slowPath(bit < 0 || bit >= Value.bitWidth) {
            _interlockBitOutOfRange(bit, Value.bitWidth, Self.self, operation)
        }
        return (1 as Value._AtomicWord) &<< Value._AtomicWord(truncatingIfNeeded: bit)
    }
}

/// The trap for a bit index outside the value's width.
@usableFromInline @inline(never)
internal func _interlockBitOutOfRange(_ bit: Int, _ width: Int, _ type: Any.Type, _ operation: StaticString) -> Never {
    fatalError("\(_interlockTypeName(type)).\(operation): bit index \(bit) is out of range 0..<\(width)")
}

/// An atomic `Int32` (Apple's `OSAtomic…32` family). See ``AtomicInteger``.
public typealias AtomicInt32 = AtomicInteger<Int32>
/// An atomic `Int64` (Apple's `OSAtomic…64` family). See ``AtomicInteger``.
public typealias AtomicInt64 = AtomicInteger<Int64>
/// An atomic `Int` (pointer-sized). See ``AtomicInteger``.
public typealias AtomicInt = AtomicInteger<Int>
/// An atomic `UInt32`. See ``AtomicInteger``.
public typealias AtomicUInt32 = AtomicInteger<UInt32>
/// An atomic `UInt64`. See ``AtomicInteger``.
public typealias AtomicUInt64 = AtomicInteger<UInt64>
/// An atomic `UInt` (pointer-sized). See ``AtomicInteger``.
public typealias AtomicUInt = AtomicInteger<UInt>
