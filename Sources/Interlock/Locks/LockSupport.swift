// LockSupport: plumbing shared by the locks — the guard of the `name` property, the misuse
// trap, and the field addresses of a state struct stored in a lock object. No algorithm lives
// here.
//
// `name` is a String, which cannot be read and written atomically, yet a Sendable lock must let
// any thread read or set it. It is guarded by its own 32-bit word (0 free, 1 held), apart from
// the lock word, so naming a lock never touches the hot path: `name` is read only when trapping.

import CInterlock

/// The locks that have a `name` (for reports that hold a lock as `AnyObject`: lock-order
/// checking), generic ones (`Locked<Value>`) included.
internal protocol _NamedLock: AnyObject {
    var name: String? { get }
}

extension Lock: _NamedLock {}
extension RecursiveLock: _NamedLock {}
extension Condition: _NamedLock {}
extension ConditionLock: _NamedLock {}
extension Locked: _NamedLock where Value: ~Copyable {}

/// A test-and-test-and-set guard over one 32-bit word, for the rarely used `name` property.
@usableFromInline
internal enum _LockNameGuard {
    /// Runs `body` with the guard word held.
    @usableFromInline
    internal static func withGuard<R>(_ word: UnsafeMutablePointer<UInt32>, _ body: () -> R) -> R {
        // Acquire: pairs with the release store below, so the String the previous holder
        // wrote is visible to this one.
        while ilk_atomic_exchange_u32(word, 1, ILK_ORDER_ACQUIRE) != 0 {
            // Relaxed: only a hint that the guard looks free; the exchange above decides.
            while ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) != 0 { ilk_thread_yield() }
        }
        defer {
            // Release: publishes this holder's String accesses to the next holder's acquire.
            ilk_atomic_store_u32(word, 0, ILK_ORDER_RELEASE)
        }
        return body()
    }

    /// Stores `newValue` with the guard held, through `exchange`, which stores its argument and
    /// returns the previous name. The previous String is released after the guard is dropped,
    /// so that no deallocation runs while other threads spin on the guard.
    @usableFromInline
    internal static func store(
        _ newValue: String?, _ word: UnsafeMutablePointer<UInt32>, _ exchange: (String?) -> String?
    ) {
        let previous = withGuard(word) { exchange(newValue) }
        _ = previous
    }
}

/// The address of `field` of the state struct that is the first stored property of `object`
/// (Condition's and ConditionLock's layout): fixed for the object's lifetime.
@inlinable @inline(__always)
internal func _stateField<State, T>(
    of object: AnyObject, _ field: KeyPath<State, T>, as _: T.Type
) -> UnsafeMutablePointer<T> {
    // SAFETY: the caller's first stored property is a `State`; objects never move and `object`
    // is alive for the call; the offset is that of a stored field of `State`.
    UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(object))
        .advanced(by: MemoryLayout<State>.offset(of: field)!)
        .assumingMemoryBound(to: T.self)
}

/// The trap for a misuse of a lock: names the type, its `name` when set, and the mistake.
/// Out of line and cold, so that building the message costs nothing on the hot path.
@usableFromInline @inline(never)
internal func _lockMisuse(_ type: StaticString, name: String?, _ mistake: String) -> Never {
    let named = name.map { " \"\($0)\"" } ?? " (unnamed)"
    fatalError("\(type)\(named): \(mistake)")
}
