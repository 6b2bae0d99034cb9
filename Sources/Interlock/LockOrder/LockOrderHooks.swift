// What each lock calls for lock-order checking (LockOrderChecking.swift, LockOrderGraph.swift).
//
// Without the package trait LockOrderChecking, every hook is an empty inline function: the
// call and its arguments vanish, and each lock compiles to the same instructions as before the
// hooks existed. With it, each hook tests the mode (one load of a lazily initialised global)
// and, when on, calls the graph out of line.
//
//   hook                         called                                           does
//   ---------------------------  -----------------------------------------------  ------------------
//   willLock(lock, kind)         before a blocking acquisition (lock(),           self-deadlock check;
//                                lockRead(), lockWrite(), lock(whenCondition:),   edges from every
//                                synchronized)                                    held lock, cycle
//                                                                                 check
//   didLock(lock, kind)          after any successful acquisition                 pushes the lock on
//                                (blocking, try or timed)                         the thread's stack
//   didUnlock(lock)              before the release                               removes it
//   forget(lock)                 in the lock's deinit                             removes its node
//
// A try or timed acquisition calls didLock only (no edges into the lock: it cannot deadlock
// forever, as lockdep treats a trylock).

import CInterlock

/// The kinds of lock that lock-order checking tells apart (for the reports, and to know which
/// may be taken again by the thread that holds them).
@usableFromInline
internal enum _LockOrderKind: UInt8, Sendable {
    case lock
    case spinLock
    case recursiveLock
    case readWriteLockRead
    case readWriteLockWrite
    case condition
    case conditionLock
    case synchronized
    case locked
    case readWriteLockedRead
    case readWriteLockedWrite

    /// Whether the thread that holds it may take it again.
    var isRecursive: Bool { self == .recursiveLock || self == .synchronized }

    /// The type's name in reports.
    var typeName: String {
        switch self {
        case .lock: return "Lock"
        case .spinLock: return "SpinLock"
        case .recursiveLock: return "RecursiveLock"
        case .readWriteLockRead, .readWriteLockWrite: return "ReadWriteLock"
        case .condition: return "Condition"
        case .conditionLock: return "ConditionLock"
        case .synchronized: return "synchronized"
        case .locked: return "Locked"
        case .readWriteLockedRead, .readWriteLockedWrite: return "ReadWriteLocked"
        }
    }
}

@usableFromInline
internal enum _LockOrder {
    /// The process's mode (`.off` without the trait).
    @usableFromInline
    static var mode: _LockOrderMode { _LockOrderMode.current }

    /// Whether the checks are on, as cheaply as the hooks need it: one relaxed load of a C
    /// global once the mode is known (ilk_lockorder.h), the Swift global's lazy initialisation
    /// (which reads the environment, and traps on a bad value) the first time.
    @inlinable @inline(__always)
    static var isOn: Bool {
        // Relaxed: the cached value is all that is read (see ilk_lockorder.h).
        let cached = ilk_lockorder_mode_cached()
        if _fastPath(cached == 1) { return false }
        if cached == 2 { return true }
        return _computeMode()
    }

    @usableFromInline @inline(never)
    static func _computeMode() -> Bool {
        let on = mode != .off
        ilk_lockorder_set_mode_cache(on ? 2 : 1)
        return on
    }

    /// Before a blocking acquisition of `lock` by the calling thread.
    @inlinable @inline(__always)
    static func willLock(_ lock: AnyObject, _ kind: _LockOrderKind) {
        #if INTERLOCK_LOCK_ORDER
        if _slowPath(isOn) { _LockOrderGraph.shared.willLock(lock, kind) }
        #endif
    }

    /// After the calling thread took `lock`, by any form of acquisition.
    @inlinable @inline(__always)
    static func didLock(_ lock: AnyObject, _ kind: _LockOrderKind) {
        #if INTERLOCK_LOCK_ORDER
        if _slowPath(isOn) { _LockOrderGraph.shared.didLock(lock, kind) }
        #endif
    }

    /// Before the calling thread releases `lock`.
    @inlinable @inline(__always)
    static func didUnlock(_ lock: AnyObject) {
        #if INTERLOCK_LOCK_ORDER
        if _slowPath(isOn) { _LockOrderGraph.didUnlock(lock) }
        #endif
    }

    /// In the deinit of a lock: it leaves the graph.
    @inlinable @inline(__always)
    static func forget(_ lock: AnyObject) {
        #if INTERLOCK_LOCK_ORDER
        if _slowPath(isOn) { _LockOrderGraph.shared.forget(_LockOrderGraph.address(lock)) }
        #endif
    }
}
