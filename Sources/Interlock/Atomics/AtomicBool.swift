// AtomicBool: a Boolean in a class, stored as one byte (0 or 1) at a stable address in the
// object's single allocation, operated on with C11 atomics. Same layout argument as
// AtomicInteger: the byte is the only stored property and Swift never touches it after init.

import CInterlock

/// A Boolean that threads can read and modify atomically.
///
/// Every `ordering:` defaults to ``MemoryOrder/sequentiallyConsistent``.
/// - Warning: A load with `.release` or `.acquireRelease`, or a store with `.acquire` or
///   `.acquireRelease`, traps.
public final class AtomicBool: @unchecked Sendable {
    // Read and written only through `_address` once initialized.
    @usableFromInline internal var _storage: UInt8

    /// Creates an atomic Boolean holding `value`.
    @inlinable
    public init(_ value: Bool = false) {
        _storage = value ? 1 : 0
    }

    @inlinable @inline(__always)
    internal var _address: UnsafeMutablePointer<UInt8> {
        // SAFETY: `_storage` is the only stored property; objects never move.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt8.self)
    }

    /// Atomically reads the value.
    @inlinable @inline(__always)
    public func load(ordering: MemoryOrder = .sequentiallyConsistent) -> Bool {
        ordering._checkLoad(Self.self, "load(ordering:)")
        return ilk_atomic_load_u8(_address, ordering._cValue) != 0
    }

    /// Atomically replaces the value.
    @inlinable @inline(__always)
    public func store(_ value: Bool, ordering: MemoryOrder = .sequentiallyConsistent) {
        ordering._checkStore(Self.self, "store(_:ordering:)")
        ilk_atomic_store_u8(_address, value ? 1 : 0, ordering._cValue)
    }

    /// Atomically replaces the value. - Returns: the value it replaced.
    @inlinable @inline(__always)
    public func exchange(_ value: Bool, ordering: MemoryOrder = .sequentiallyConsistent) -> Bool {
        ilk_atomic_exchange_u8(_address, value ? 1 : 0, ordering._cValue) != 0
    }

    /// Atomically replaces the value with `desired` if it equals `expected`.
    /// - Returns: whether the exchange happened, and the value found.
    @inlinable @inline(__always)
    public func compareExchange(
        expected: Bool, desired: Bool, ordering: MemoryOrder = .sequentiallyConsistent
    ) -> (exchanged: Bool, original: Bool) {
        let word: UInt8 = expected ? 1 : 0
        let found = ilk_atomic_cas_value_u8(
            _address, word, desired ? 1 : 0, ordering._cValue, ordering._casFailureValue)
        return (found == word, found != 0)
    }
}
