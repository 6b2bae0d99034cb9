// Lazy: a value computed once, on first use, by one thread — dispatch_once guarding a static
// variable, as one object.
//
// Algorithm: `_OnceWord` (OnceWord.swift), the run-once futex word that Once uses, whose body
// here is "compute the value and store it in the object". That file holds the state table, the
// invariants and the memory-ordering argument; this one adds where the value and the closure
// live and who may touch them.
//
// Layout: the object's stored properties, in its one heap allocation:
//
//   field      written by                               read by
//   ---------  ---------------------------------------  ---------------------------------------
//   _state     _OnceWord (atomics only)                 _OnceWord: NEW, RUNNING, SLEEPERS, DONE;
//                                                       the getter's fast path (Atomic.load)
//   _runner    _OnceWord: the runner's thread id         the recursion check
//   _value     init (nil); the runner, once, inside     anyone, only after reading DONE with an
//              the body, before its release of DONE     acquire (or the runner itself)
//   _make      init; the runner, once, inside the body  the runner, inside the body
//              (taken out and set to nil)
//
// Invariants:
//   - `_value` is written exactly once after init, by the one thread that ever runs the body
//     (`make` cannot throw, so the first body is the only one), and read only after DONE, so
//     a write and a read never overlap; `_make` is touched only inside that body. Neither needs
//     atomics: the state word orders every access (release exchange of DONE, acquire loads).
//     `@exclusivity(unchecked)` drops Swift's run-time exclusivity bookkeeping on them, which
//     the state word makes redundant, so the fast path stays one load, a compare and a copy.
//   - Once DONE, `_value` holds `.some`: the getter unwraps it unchecked.
//   - The closure is taken out of `_make` when the body starts and released after DONE is
//     published and the sleepers are woken, so whatever it captured is freed once the value
//     exists (waiters do not wait for those deinitializers).
//
// Costs: once computed, `value` is one inline acquire load and a compare, then a copy of the
// value (a retain when it holds a reference). The fast path's load is the Synchronization
// module's `Atomic.load`, a compiler builtin, not the shim's C function: Swift's IRGen marks
// every call inside a thunk `noinline`, so where the optimizer inlines `value` into a client's
// protocol witness thunk a C call would stay a call (2.4-3.2 times a Swift lazy global, the
// deciding figure: OnceBenchmarks); the slow path, `_OnceWord`, reaches the same word through its address.

import CInterlock
import Synchronization

/// A value computed on first use, exactly once, by whichever thread asks first.
///
/// The first read of ``value`` calls the closure given to ``init(_:)`` on the reading thread and
/// stores its result; threads that read while it runs sleep until it is stored; every later
/// read returns the stored value at the cost of one atomic load. Every reader gets the same
/// value, with everything the closure wrote visible to it. The closure is released once the
/// value is stored, with whatever it captured.
///
/// ```swift
/// let table = Lazy { buildLookupTable() }
/// let entry = table.value[key]
/// ```
///
/// - Warning: Reading ``value`` from inside the closure, on the thread that runs it, traps with
///   a message ("Lazy: value read recursively from its own initializer") instead of waiting for
///   itself forever. A closure that waits for another thread that reads ``value`` deadlocks;
///   that is not detected.
public final class Lazy<Value: Sendable>: @unchecked Sendable {
    // The state word and the runner's id, contiguous (4 + 4 bytes): `_OnceWord` reaches both
    // through `_word`; the getter's fast path loads `_state` (see the file comment). The first
    // stored properties, so at a fixed offset whatever `Value` is.
    @usableFromInline internal let _state = Atomic<UInt32>(0)
    @usableFromInline internal var _runner: UInt32 = 0
    // Written once by the runner before DONE; read after DONE (see the file comment).
    @exclusivity(unchecked) @usableFromInline internal var _value: Value? = nil
    // Touched only by the runner, inside the body (see the file comment).
    @exclusivity(unchecked) @usableFromInline internal var _make: (@Sendable () -> Value)?

    /// Creates a lazy value that `make` computes on first use.
    ///
    /// - Parameter make: Computes the value; called at most once, on the thread of the first
    ///   read of ``value``, and released afterwards.
    public init(_ make: @escaping @Sendable () -> Value) {
        _make = make
        assert(
            withUnsafeMutablePointer(to: &_runner) { UnsafeMutableRawPointer($0) }
                == UnsafeMutableRawPointer(_word + 1),
            "Lazy: the runner id does not follow the state word (the layout _OnceWord relies on)")
    }

    @inlinable @inline(__always)
    internal var _word: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_state` (an Atomic<UInt32>: 4 bytes, laid out as a UInt32) is the first stored
        // property of this final class and `_runner` follows it at offset 4, so neither offset
        // depends on `Value`; objects never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }

    /// The value: computed by the first read, on its thread; every read returns the same one.
    ///
    /// A read while another thread computes it waits (asleep) until it is stored.
    ///
    /// - Warning: Reading it from inside the closure that computes it, on the thread that runs
    ///   the closure, traps with the message "Lazy: value read recursively from its own
    ///   initializer".
    @inlinable
    public var value: Value {
        // Acquire: pairs with the runner's release exchange of DONE (OnceWord.swift).
        if _fastPath(_state.load(ordering: .acquiring) == _OnceWord.done) {
            // SAFETY: DONE was read with an acquire, so the runner's store of `.some` is visible
            // and nothing writes `_value` again.
            return _value.unsafelyUnwrapped
        }
        return _computeValue()
    }

    /// The slow path of ``value``: computes the value, or waits for the thread that does.
    ///
    /// `@inlinable` (yet never inlined) so that a client specializes it for its `Value`: as an
    /// opaque generic it copied the optional closure and value through value witnesses and
    /// looked up `Optional<Value>`'s metadata on every first read: 204 ns per fresh `Lazy<Int>`
    /// on one thread, against 46 ns specialized and 41 ns with the closure moved out instead of
    /// copied (a replica of OnceBenchmarks' cold race run by one thread).
    @inlinable @inline(never)
    internal func _computeValue() -> Value {
        // Holds the closure until this function returns: after DONE and the wake-up.
        var make: (@Sendable () -> Value)? = nil
        _OnceWord.runSlow(_word, for: .lazy) {
            // The runner, alone (RUNNING): take the closure out (a move: no retain, no
            // release), compute, store.
            swap(&make, &_make)
            _value = make.unsafelyUnwrapped()
        }
        // SAFETY: DONE was reached (by this thread's own store, or read with an acquire).
        return _value.unsafelyUnwrapped
    }
}
