// ReadWriteLocked<Value>: a value that readers share and writers change, reachable only under
// its lock, on ReadWriteLock's algorithm.
//
// Algorithm: `_RWLockCore` (ReadWriteLockCore.swift, with its state table, invariants and
// orderings): readers enter at once while no writer holds or waits, writers are preferred,
// readers that waited 1 ms are granted the lock. This file adds the value and the closures.
//
// Layout: one heap allocation, the object's stored properties at a stable address:
//
//   _state.words   `ilk_rwlock_words` (CShims/include/ilk_rwlock.h): the writer-side words on
//                  the first 192 bytes, the reader count R in its own 128-byte block
//   _state.value   the protected value, after R's block: on a line of its own (for a small
//                  value), which readers only read, so it stays shared in every reader's cache
//                  until a writer changes it; R's line, which every reader writes, is apart.
//
// Memory ordering: all of it is the core's. A read lock's acquire (its seq_cst load of W) pairs
// with the last write unlock's release store, so a reader sees the last writer's value; a
// writer's claim (seq_cst) and its load of R that reads 0 (acquire, pairing with the readers'
// release decrements) order its writes after every earlier reader's reads. The value is never
// touched outside a lock.

import CInterlock

/// The words and the value of a ``ReadWriteLocked``, as its first stored property.
@usableFromInline
internal struct _RWLockedState<Value> {
    @usableFromInline internal var words: ilk_rwlock_words
    @usableFromInline internal var value: Value

    @usableFromInline
    internal init(words: ilk_rwlock_words, value: consuming Value) {
        self.words = words
        self.value = value
    }
}

/// A value protected by a reader-writer lock: many threads may read it at once, one at a time
/// may change it, and nothing reaches it without the lock.
///
/// The lock is ``ReadWriteLock``'s algorithm: an uncontended read is one atomic increment and
/// one decrement, readers run at the same time, writers are preferred (while a writer waits,
/// new readers wait behind it) and readers are not starved either. The value sits in the same
/// allocation as the lock's words.
///
/// ```swift
/// final class RouteTable: Sendable {
///     private let routes = ReadWriteLocked<[String: String]>([:])
///     func lookup(_ path: String) -> String? { routes.withReadLock { $0[path] } }
///     func set(_ path: String, _ target: String) { routes.withWriteLock { $0[path] = target } }
/// }
/// ```
///
/// `ReadWriteLocked` is `Sendable` when `Value` is: readers share the value at once, so a
/// value that is not `Sendable` could be read by two threads together.
///
/// - Warning: Not recursive: a reader that asks for the lock again from inside its body
///   deadlocks when a writer is waiting, and a writer that does deadlocks at once (lock-order
///   checking reports both).
public final class ReadWriteLocked<Value> {
    // Reached only through `_statePointer`; never as a Swift property after init.
    @usableFromInline internal var _state: _RWLockedState<Value>

    /// Creates a lock protecting `initialValue`, which the lock now owns.
    public init(_ initialValue: consuming sending Value) {
        _state = _RWLockedState(words: _RWLockCore.initialWords(), value: initialValue)
    }

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    @inlinable @inline(__always)
    internal var _statePointer: UnsafeMutablePointer<_RWLockedState<Value>> {
        // SAFETY: `_state` is the first stored property of this final class, at the start of
        // the stored properties rounded up to its alignment (as in `Locked`). Objects never
        // move, and `self` is alive for the call.
        let start = UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(self))
        let alignment = MemoryLayout<_RWLockedState<Value>>.alignment
        if alignment <= 16 { return start.assumingMemoryBound(to: _RWLockedState<Value>.self) }
        return start.alignedUp(toMultipleOf: alignment).assumingMemoryBound(to: _RWLockedState<Value>.self)
    }

    /// The value, after the words at its alignment (as `Locked._valuePointer`: never through
    /// the state's `pointee`, which would be a formal access of the words as well).
    @inlinable @inline(__always)
    internal var _valuePointer: UnsafeMutablePointer<Value> {
        let alignment = MemoryLayout<Value>.alignment
        let offset = (MemoryLayout<ilk_rwlock_words>.size + alignment - 1) & ~(alignment - 1)
        return (UnsafeMutableRawPointer(_statePointer) + offset).assumingMemoryBound(to: Value.self)
    }

    /// The algorithm over this lock's words (the first field of the state).
    @inlinable @inline(__always)
    internal var _core: _RWLockCore { _RWLockCore(UnsafeMutableRawPointer(_statePointer)) }

    // MARK: Readers

    /// Runs `body` with the lock held for reading and the value lent to it; other readers may
    /// run at the same time. Releases the lock when `body` returns or throws.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable @inline(__always)
    public func withReadLock<R, E: Error>(_ body: (borrowing Value) throws(E) -> R) throws(E) -> R {
        _LockOrder.willLock(self, .readWriteLockedRead)
        let core = _core
        #if INTERLOCK_CONTENTION
        core.lockRead(profiling: self, .readWriteLockedRead)
        #else
        core.lockRead()
        #endif
        _LockOrder.didLock(self, .readWriteLockedRead)
        // No `defer`: the optimizer outlined its block into a call (objdump of a dependent).
        let result: R
        do {
            result = try body(_valuePointer.pointee)
        } catch {
            _LockOrder.didUnlock(self)
            core.unlockRead()
            throw error
        }
        _LockOrder.didUnlock(self)
        core.unlockRead()
        return result
    }

    /// Runs `body` with the lock held for reading, waiting for the lock at most until
    /// `deadline`.
    ///
    /// Never returns `nil` before the deadline; a deadline already passed makes this a try
    /// (which fails while a writer holds the lock or waits for it).
    /// - Returns: what `body` returns, or `nil` without running it when the deadline passed
    ///   first.
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable
    public func withReadLock<R, E: Error>(
        before deadline: ContinuousClock.Instant, _ body: (borrowing Value) throws(E) -> R
    ) throws(E) -> R? {
        let core = _core
        #if INTERLOCK_CONTENTION
        guard core.lockRead(before: deadline, profiling: self, .readWriteLockedRead) else { return nil }
        #else
        guard core.lockRead(before: deadline) else { return nil }
        #endif
        _LockOrder.didLock(self, .readWriteLockedRead)
        // No `defer`: the optimizer outlined its block into a call (objdump of a dependent).
        let result: R
        do {
            result = try body(_valuePointer.pointee)
        } catch {
            _LockOrder.didUnlock(self)
            core.unlockRead()
            throw error
        }
        _LockOrder.didUnlock(self)
        core.unlockRead()
        return result
    }

    // MARK: Writers

    /// Runs `body` with the lock held for writing (no reader or other writer inside) and the
    /// value passed `inout`. Releases the lock when `body` returns or throws.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable @inline(__always)
    public func withWriteLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        _LockOrder.willLock(self, .readWriteLockedWrite)
        let core = _core
        #if INTERLOCK_CONTENTION
        core.lockWrite(profiling: self, .readWriteLockedWrite)
        #else
        core.lockWrite()
        #endif
        _LockOrder.didLock(self, .readWriteLockedWrite)
        // No `defer`: the optimizer outlined its block into a call (objdump of a dependent).
        let result: R
        do {
            result = try body(&_valuePointer.pointee)
        } catch {
            _LockOrder.didUnlock(self)
            core.unlockWrite()
            throw error
        }
        _LockOrder.didUnlock(self)
        core.unlockWrite()
        return result
    }

    /// Runs `body` with the lock held for writing, waiting for the lock at most until
    /// `deadline`.
    ///
    /// Never returns `nil` before the deadline; a deadline already passed makes this a try.
    /// - Returns: what `body` returns, or `nil` without running it when the deadline passed
    ///   first.
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable
    public func withWriteLock<R, E: Error>(
        before deadline: ContinuousClock.Instant, _ body: (inout Value) throws(E) -> R
    ) throws(E) -> R? {
        let core = _core
        #if INTERLOCK_CONTENTION
        guard core.lockWrite(before: deadline, profiling: self, .readWriteLockedWrite) else { return nil }
        #else
        guard core.lockWrite(before: deadline) else { return nil }
        #endif
        _LockOrder.didLock(self, .readWriteLockedWrite)
        // No `defer`: the optimizer outlined its block into a call (objdump of a dependent).
        let result: R
        do {
            result = try body(&_valuePointer.pointee)
        } catch {
            _LockOrder.didUnlock(self)
            core.unlockWrite()
            throw error
        }
        _LockOrder.didUnlock(self)
        core.unlockWrite()
        return result
    }
}

/// Readers share the value at once, so the lock is `Sendable` only when the value is.
extension ReadWriteLocked: @unchecked Sendable where Value: Sendable {}
