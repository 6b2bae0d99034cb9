// AtomicLazyReference: an object reference set once by whichever thread gets there first —
// the compare-and-swap lazy initialisation of Apple-era C code as a type:
//
//     if (p == NULL) {
//         buffer_t *mine = make();
//         if (!OSAtomicCompareAndSwapPtrBarrier(NULL, mine, (void *volatile *)&p)) free(mine);
//     }
//     use(p);
//
// Algorithm: one pointer word, nil until a compare-and-swap from nil installs a strong (+1)
// reference; it never changes again until the object is deinitialized. Callers that race all
// build their own instance; exactly one CAS succeeds, and every caller gets the winner's
// instance. A loser's CAS fails and it gives back the +1 it took for the CAS, so its instance
// lives only as long as the loser's own references (the `free(mine)` of the C idiom). No
// thread waits for another: unlike Lazy, the losers' work is wasted instead of waited for, so
// this suits instances that are cheap to build or whose construction must not block.
//
// State (the object's one stored property, at a stable address):
//
//   value      meaning
//   ---------  ------------------------------------------------------------------------------
//   nil        no instance stored yet
//   p          the stored instance, Unmanaged.passRetained(instance).toOpaque(): this object
//              owns one strong reference to it, released by deinit; final
//
// Invariants:
//   - The word goes from nil to p at most once (only a CAS from nil writes it), so every
//     storeIfNil returns the same instance, and every load returns nil or that instance.
//   - The retain count an operation adds is the one it removes or hands to the word: the
//     winner's +1 belongs to the word, a loser's +1 is released before it returns. So
//     instances that lost are deinitialized as soon as their callers drop them, and the
//     winner when this object is.
//   - `load()` returns the instance at +0 and Swift retains it for the caller; the word's own
//     +1 keeps it alive meanwhile, since the word is released only in deinit, which cannot run
//     while a caller still uses the object.
//
// Memory ordering (x86-64 and aarch64):
//   - The winning CAS is a release: the instance's initialisation (its stored properties,
//     written before storeIfNil) happens-before every acquire that reads the pointer — a
//     losing CAS (acquire on failure) and `load()` (an acquire load). On aarch64 the CAS is
//     CASAL (or an LDAXR/STLXR loop) and the load LDAR: a relaxed LDR could return the pointer
//     and then read the instance's fields from before their initialisation. On x86-64 the CAS
//     is LOCK CMPXCHG and the acquire load a plain MOV.
//   - The CAS's success order is acq_rel, not release: C11 forbids a failure order (acquire)
//     that is not weaker than the success order, and release is not stronger than acquire.
//     The acquire half orders nothing (the CAS found nil) and costs nothing on x86-64.
//   - deinit loads the word with an acquire; the last release of this object already orders
//     every earlier operation before deinit, the acquire only states it for the word.

import CInterlock

/// An object reference that is stored once, by the first of racing callers, and read without
/// locking: the compare-and-swap lazy initialisation of `OSAtomicCompareAndSwapPtrBarrier`.
///
/// Every caller of ``storeIfNil(_:)`` gets the same instance: the one stored by the first call
/// to complete. Racing callers may each build an instance; the losers' instances are released
/// (nothing retains them once their callers drop them), and the stored one lives as long as
/// this object. No caller ever waits for another.
///
/// ```swift
/// let cache = AtomicLazyReference<Table>()
/// func table() -> Table { cache.load() ?? cache.storeIfNil(Table()) }
/// ```
///
/// - Note: Use ``Lazy`` instead when the instance is expensive to build or must be built only
///   once: its losers wait instead of building.
public final class AtomicLazyReference<Instance: AnyObject & Sendable>: @unchecked Sendable {
    // Reached only through `_slot` after init (see the file comment).
    @usableFromInline internal var _pointer: UnsafeMutableRawPointer? = nil

    /// Creates a reference with no instance stored.
    public init() {}

    deinit {
        // Acquire: see the file comment; this thread holds the last reference to `self`.
        if let stored = ilk_atomic_load_ptr(_slot, ILK_ORDER_ACQUIRE) {
            Unmanaged<Instance>.fromOpaque(stored).release()
        }
    }

    @inlinable @inline(__always)
    internal var _slot: UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        // SAFETY: `_pointer` is the first and only stored property of this final class; objects
        // never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    /// Stores `desired` if no instance is stored yet, and returns the stored instance.
    ///
    /// - Parameter desired: The instance to store when none is.
    /// - Returns: `desired` when this call stored it, otherwise the instance stored earlier (by
    ///   whichever call completed first); every call returns the same instance.
    @inlinable
    public func storeIfNil(_ desired: Instance) -> Instance {
        let mine = Unmanaged.passRetained(desired).toOpaque()
        // Success acq_rel: the release publishes `desired`'s initialisation to every later
        // acquire of the pointer (file comment). Failure acquire: pairs with the winner's release,
        // so that the instance returned is seen initialised.
        let found = ilk_atomic_cas_value_ptr(_slot, nil, mine, ILK_ORDER_ACQ_REL, ILK_ORDER_ACQUIRE)
        guard let winner = found else { return desired }
        // Lost: give back the +1 taken for the CAS; the caller's own reference keeps `desired`.
        Unmanaged<Instance>.fromOpaque(mine).release()
        return Unmanaged<Instance>.fromOpaque(winner).takeUnretainedValue()
    }

    /// The stored instance, or `nil` when none is stored yet.
    ///
    /// When it returns an instance, everything written to it before it was stored is visible.
    @inlinable
    public func load() -> Instance? {
        // Acquire: pairs with the winning CAS's release (file comment).
        guard let stored = ilk_atomic_load_ptr(_slot, ILK_ORDER_ACQUIRE) else { return nil }
        // +0: the stored +1 keeps it alive while `self` is; Swift retains the returned reference.
        return Unmanaged<Instance>.fromOpaque(stored).takeUnretainedValue()
    }
}
