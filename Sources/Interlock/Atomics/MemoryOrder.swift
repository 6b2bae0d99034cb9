// MemoryOrder and fences.
//
// The five orderings of the C11/C++11 memory model (consume is left out, as every compiler
// promotes it to acquire). An ordering that means nothing for an operation — a load that
// releases, a store that acquires — is a programmer error and traps with a message naming the
// operation; every check is `@inlinable` and folds away when the ordering is a constant.

import CInterlock

/// The memory ordering of an atomic operation, as in C11's `memory_order`.
///
/// Every `ordering:` parameter in Interlock defaults to ``sequentiallyConsistent``, the
/// "Barrier" variants of Apple's OSAtomic functions; ``relaxed`` is the barrier-free variant.
public enum MemoryOrder: Sendable {
    /// Atomicity only: no ordering with respect to other memory operations.
    case relaxed
    /// Later reads and writes of this thread cannot move before this load; pairs with a
    /// release by another thread. Valid for loads and read-modify-write operations.
    case acquire
    /// Earlier reads and writes of this thread cannot move after this store; pairs with an
    /// acquire by another thread. Valid for stores and read-modify-write operations.
    case release
    /// Both ``acquire`` and ``release``. Valid for read-modify-write operations only.
    case acquireRelease
    /// ``acquireRelease`` plus a single total order of all sequentially consistent operations.
    case sequentiallyConsistent

    /// The C11 value (`__ATOMIC_*`) the shim takes.
    @inlinable @inline(__always)
    internal var _cValue: Int32 {
        switch self {
        case .relaxed: return ILK_ORDER_RELAXED
        case .acquire: return ILK_ORDER_ACQUIRE
        case .release: return ILK_ORDER_RELEASE
        case .acquireRelease: return ILK_ORDER_ACQ_REL
        case .sequentiallyConsistent: return ILK_ORDER_SEQ_CST
        }
    }

    /// The failure ordering of a compare-and-exchange whose success ordering is `self`:
    /// the strongest ordering a load may have that is no stronger than `self` (C11 7.17.7.4).
    @inlinable @inline(__always)
    internal var _casFailureValue: Int32 {
        switch self {
        case .relaxed, .release: return ILK_ORDER_RELAXED
        case .acquire, .acquireRelease: return ILK_ORDER_ACQUIRE
        case .sequentiallyConsistent: return ILK_ORDER_SEQ_CST
        }
    }

    /// Traps unless `self` is valid for a load (relaxed, acquire, sequentially consistent).
    @inlinable @inline(__always)
    internal func _checkLoad(_ type: Any.Type, _ operation: StaticString) {
        if _slowPath(self == .release || self == .acquireRelease) {
            _interlockInvalidOrdering(self, type, operation, kind: "a load")
        }
    }

    /// Traps unless `self` is valid for a store (relaxed, release, sequentially consistent).
    @inlinable @inline(__always)
    internal func _checkStore(_ type: Any.Type, _ operation: StaticString) {
        if _slowPath(self == .acquire || self == .acquireRelease) {
            _interlockInvalidOrdering(self, type, operation, kind: "a store")
        }
    }
}

/// The trap for an ordering that is invalid for its operation. Out of line and cold, so that
/// the message costs nothing on the hot path.
@usableFromInline @inline(never)
internal func _interlockInvalidOrdering(
    _ order: MemoryOrder, _ type: Any.Type, _ operation: StaticString, kind: StaticString
) -> Never {
    let valid =
        kind.description == "a load"
        ? ".relaxed, .acquire or .sequentiallyConsistent"
        : ".relaxed, .release or .sequentiallyConsistent"
    fatalError(
        "\(_interlockTypeName(type)).\(operation): .\(order) is not a valid ordering for \(kind); "
            + "use \(valid)")
}

/// The user-facing name of an Interlock type: `AtomicInt32` rather than `AtomicInteger<Int32>`.
@usableFromInline
internal func _interlockTypeName(_ type: Any.Type) -> String {
    let name = String(describing: type)
    if name.hasPrefix("AtomicInteger<"), name.hasSuffix(">") {
        return "Atomic" + name.dropFirst("AtomicInteger<".count).dropLast()
    }
    return name
}

/// A full two-way memory fence, like Apple's `OSMemoryBarrier()`: no load or store moves
/// across it in either direction, and it takes part in the single total order of
/// sequentially consistent operations.
@inlinable @inline(__always)
public func memoryBarrier() {
    ilk_fence_full()
}

/// A thread fence with the given ordering (C11 `atomic_thread_fence`).
///
/// An ``MemoryOrder/acquire`` fence after a relaxed load makes it an acquire load; a
/// ``MemoryOrder/release`` fence before a relaxed store makes it a release store.
/// As in C11, a ``MemoryOrder/relaxed`` fence has no effect.
/// - Note: ThreadSanitizer does not model standalone fences; code checked with TSan should
///   put its orderings on the atomic operations themselves.
@inlinable @inline(__always)
public func atomicFence(_ order: MemoryOrder) {
    ilk_thread_fence(order._cValue)
}

/// Stops the compiler from moving memory accesses across this point, and emits no
/// instruction (C11 `atomic_signal_fence`). It orders nothing between threads.
@inlinable @inline(__always)
public func compilerBarrier() {
    ilk_compiler_barrier()
}
