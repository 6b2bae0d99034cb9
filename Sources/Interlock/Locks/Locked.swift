// Locked<Value>: a value that only its lock's holder can reach, on Lock's algorithm.
//
// Algorithm: `_MutexWord` (MutexWord.swift; Drepper's three-state futex mutex with bounded
// spinning), as `Lock`, plus an owner word so that a relock from inside the body traps instead
// of deadlocking.
//
// Layout: one heap allocation, the object's stored properties at a stable address:
//
//   _state.words.0   the mutex word: 0 unlocked, 1 locked, 2 locked and maybe waiters
//   _state.words.1   owner: the holder's kernel thread id, 0 when free
//   _state.words.2   the guard word of `name` (LockSupport.swift)
//   _state.words.3   padding
//   _state.value     the protected value, right after the words (on their cache line when it
//                    is small: one miss brings the lock and the data)
//   _name            the name, read only under its guard, and only when trapping or asked
//
// Swift never accesses `_state` as a property after `init` (that would be a dynamic
// exclusivity check on a class property, and a formal access of the words too): the words
// through atomics, the value through an `UnsafeMutablePointer<Value>` of its own, whose
// `pointee` is addressed in place (no copy, no exclusivity check; the mutex is what makes the
// access exclusive).
//
// Invariants:
//   - owner == t (t != 0) exactly while thread t holds the mutex; t writes it right after
//     taking the mutex and writes 0 right before releasing it (RecursiveLock's scheme).
//   - the value is read or written only between a successful acquisition and its release.
//
// Memory ordering:
//   - The mutex's acquire (CAS) and release (decrement) order every body after the previous
//     one: the value's plain accesses need nothing more (MutexWord.swift argues them for
//     aarch64 as well).
//   - owner is relaxed in both directions. Only the holder writes its own id; a thread reads
//     its own id there only if it wrote it and has not cleared it since, and a thread always
//     sees its own latest write to a location (coherence), so "do I hold it?" is exact for the
//     asking thread without any ordering. Other threads' ids are only compared against.
//   - The relock check runs only when the fast CAS fails (the lock is held by someone): the
//     uncontended path pays one thread-id read (cached per thread, a TLS load) and two relaxed
//     stores on a line it already owns.
//
// Decision, the owner's form: the thread id, not an address in the holder's stack. Taking a
// local's address makes Swift add a stack protector to the caller (two more TLS loads and a
// compare), and the same benchmark run put it behind: Locked<Int> lock+unlock 12.2 ns against
// 10.3 for the same lock without an owner (thread id: 11.1 against 9.71 in its run). Writing
// the owner into the mutex word itself (the word holding the holder's id, as glibc's
// error-checking mutex does) would cost no store at all; it is a different futex protocol, with
// its own model to check: not done (Benchmarks/README.md, "Locks that own their state").

import CInterlock
import Synchronization

/// The words and the value of a ``Locked``, in that order, as its first stored property.
@usableFromInline
internal struct _LockedState<Value: ~Copyable>: ~Copyable {
    @usableFromInline internal var words: (UInt32, UInt32, UInt32, UInt32)
    @usableFromInline internal var value: Value

    @inlinable
    internal init(_ value: consuming Value) {
        words = (0, 0, 0, 0)
        self.value = value
    }
}

/// A value protected by its own lock: the only way to reach the value is to hold the lock.
///
/// The Swift 6 way to share mutable state between threads: give the state to the lock, and
/// the type that holds the `Locked` is `Sendable` without `@unchecked`. The lock is ``Lock``'s
/// algorithm (an uncontended ``withLock(_:)`` is one CAS and one decrement, contended threads
/// spin briefly and then sleep on a futex), in one allocation with the value.
///
/// ```swift
/// final class Registry: Sendable {
///     private let entries = Locked<[String: Int]>([:])
///     func add(_ key: String) { entries.withLock { $0[key, default: 0] += 1 } }
///     func count(_ key: String) -> Int { entries.withLock { $0[key] ?? 0 } }
/// }
/// ```
///
/// The closures take the value `inout sending` and return `sending` results, so a value that is
/// not `Sendable` can be moved in and out exactly where the compiler can prove that nothing
/// else still refers to it. Errors are typed: a body that throws `E` makes the call throw `E`,
/// after the lock has been released. `Value` and the results may be noncopyable.
///
/// - Important: Do not return the protected value itself from a body when its type is a
///   non-`Sendable` class: Swift 6.3 does not yet refuse it (nor for `Synchronization.Mutex`),
///   and the caller would then share an object that others change under the lock.
/// - Warning: Not recursive. Calling any `withLock` form of the same `Locked` from inside its
///   own body, on the same thread, traps with a message naming it (its ``name`` when set),
///   rather than deadlocking.
/// - Note: Not fair, as ``Lock``: a thread that arrives while the lock is released may take it
///   ahead of sleeping ones.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // Reached only through `_statePointer` (see the file comment).
    @usableFromInline internal var _state: _LockedState<Value>
    // Accessed only while holding the guard word (words.2).
    @usableFromInline internal var _name: String? = nil

    /// Creates a lock protecting `initialValue`, which the lock now owns.
    /// - Parameter initialValue: the value; `sending`, so it may be of a non-`Sendable` type
    ///   when nothing else refers to it.
    @inlinable
    public init(_ initialValue: consuming sending Value) {
        _state = _LockedState(initialValue)
    }

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// A name for the lock, used in trap messages and lock-order reports; `nil` until set.
    ///
    /// Safe to read and set from any thread, holding the lock or not.
    public var name: String? {
        get { _LockNameGuard.withGuard(_word + 2) { _name } }
        set {
            _LockNameGuard.store(newValue, _word + 2) {
                let old = _name; _name = $0; return old
            }
        }
    }

    @inlinable @inline(__always)
    internal var _statePointer: UnsafeMutablePointer<_LockedState<Value>> {
        // SAFETY: `_state` is the first stored property of this final class, at the start of
        // the stored properties rounded up to its alignment (more than 16 only for an
        // over-aligned Value; the rounding folds to nothing otherwise). Objects never move,
        // and `self` is alive for the call.
        let start = UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(self))
        let alignment = MemoryLayout<_LockedState<Value>>.alignment
        if alignment <= 16 { return start.assumingMemoryBound(to: _LockedState<Value>.self) }
        return start.alignedUp(toMultipleOf: alignment).assumingMemoryBound(to: _LockedState<Value>.self)
    }

    /// The value, after the 16 bytes of words at its alignment (Swift lays a struct's fields out
    /// in order, each at the next multiple of its alignment). Reached by its own pointer: an
    /// access through the state's `pointee` would be a formal access of the whole state, the
    /// words included, which other threads change atomically meanwhile (ThreadSanitizer reports
    /// such an access as a race, and it is one in Swift's model).
    @inlinable @inline(__always)
    internal var _valuePointer: UnsafeMutablePointer<Value> {
        let alignment = MemoryLayout<Value>.alignment
        let offset = (MemoryLayout<(UInt32, UInt32, UInt32, UInt32)>.size + alignment - 1) & ~(alignment - 1)
        return (UnsafeMutableRawPointer(_statePointer) + offset).assumingMemoryBound(to: Value.self)
    }

    /// The mutex word; the owner word is `_word + 1`, the name's guard `_word + 2`.
    @inlinable @inline(__always)
    internal var _word: UnsafeMutablePointer<UInt32> {
        // SAFETY: `words` is the first field of the state, a homogeneous tuple of UInt32.
        UnsafeMutableRawPointer(_statePointer).assumingMemoryBound(to: UInt32.self)
    }

    // MARK: Taking and releasing

    /// Takes the lock (blocking), records the owner.
    @inlinable @inline(__always)
    internal func _lock() {
        _LockOrder.willLock(self, .locked)
        let word = _word
        if _slowPath(!_MutexWord.tryLock(word)) { _lockContended() }
        // Relaxed: read only by this thread's own relock check (file comment). A builtin, so
        // that it stays an instruction in a protocol witness (WordAtomics.swift).
        _Word32.atomic(word + 1).pointee.store(ilk_current_thread_id(), ordering: .relaxed)
        _LockOrder.didLock(self, .locked)
    }

    /// Takes the lock if it is free, without waiting; traps on a relock.
    @inlinable @inline(__always)
    internal func _tryLock() -> Bool {
        let word = _word
        guard _fastPath(_MutexWord.tryLock(word)) else {
            _checkNotOwner()
            return false
        }
        // Relaxed: as in `_lock`.
        _Word32.atomic(word + 1).pointee.store(ilk_current_thread_id(), ordering: .relaxed)
        _LockOrder.didLock(self, .locked)
        return true
    }

    /// Takes the lock before `deadline` or returns `false` (never before it); traps on a relock.
    @inlinable @inline(__always)
    internal func _lock(before deadline: ContinuousClock.Instant) -> Bool {
        let word = _word
        if _slowPath(!_MutexWord.tryLock(word)) {
            guard _lockContended(before: deadline) else { return false }
        }
        // Relaxed: as in `_lock`.
        _Word32.atomic(word + 1).pointee.store(ilk_current_thread_id(), ordering: .relaxed)
        _LockOrder.didLock(self, .locked)
        return true
    }

    /// Releases the lock, which the calling thread holds (every caller is a `withLock` form).
    @inlinable @inline(__always)
    internal func _unlock() {
        _LockOrder.didUnlock(self)
        let word = _word
        // Relaxed: the holder clears its own id; the release below publishes the body.
        _Word32.atomic(word + 1).pointee.store(0, ordering: .relaxed)
        if _slowPath(!_MutexWord.unlock(word, for: .locked)) { _unlockedMisuse() }
    }

    /// The fast CAS failed: trap on a relock, else wait as `Lock` does.
    @usableFromInline @inline(never)
    internal func _lockContended() {
        _checkNotOwner()
        #if INTERLOCK_CONTENTION
        _MutexWord.lock(_word, for: .locked, profiling: self, .locked)
        #else
        _MutexWord.lock(_word, for: .locked)
        #endif
    }

    @usableFromInline @inline(never)
    internal func _lockContended(before deadline: ContinuousClock.Instant) -> Bool {
        _checkNotOwner()
        #if INTERLOCK_CONTENTION
        return _MutexWord.lock(_word, before: deadline, for: .locked, profiling: self, .locked)
        #else
        return _MutexWord.lock(_word, before: deadline, for: .locked)
        #endif
    }

    /// Traps when the calling thread holds this lock (a relock from inside the body).
    @usableFromInline @inline(never)
    internal func _checkNotOwner() {
        // Relaxed: exact for the asking thread (file comment).
        if ilk_atomic_load_u32(_word + 1, ILK_ORDER_RELAXED) == ilk_current_thread_id() {
            _lockMisuse(
                "Locked", name: name,
                "locked again from inside its own withLock body on the same thread (a relock: Locked is not recursive)")
        }
    }

    @usableFromInline @inline(never)
    internal func _unlockedMisuse() -> Never {
        _lockMisuse("Locked", name: name, "released while not locked (its words were corrupted)")
    }

    // MARK: The closures

    /// Runs `body` with the lock held and the value passed `inout`; releases the lock when
    /// `body` returns or throws.
    ///
    /// - Parameter body: the critical section. Must not call a `withLock` form of this
    ///   `Locked` (that traps).
    /// - Returns: what `body` returns; `sending`, so it may be of a non-`Sendable` type when
    ///   it does not share state with the value.
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable @inline(__always)
    public func withLock<R: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending R
    ) throws(E) -> sending R {
        _lock()
        defer { _unlock() }
        return try body(&_valuePointer.pointee)
    }

    /// Runs `body` with the lock held if the lock is free at once; never waits.
    ///
    /// - Returns: what `body` returns, or `nil` without running it when another thread holds
    ///   the lock. (Called from inside this lock's own body it traps, as every relock does.)
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable @inline(__always)
    public func withLockIfAvailable<R: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending R
    ) throws(E) -> sending R? {
        guard _tryLock() else { return nil }
        defer { _unlock() }
        return .some(try body(&_valuePointer.pointee))
    }

    /// Runs `body` with the lock held, waiting for the lock at most until `deadline`.
    ///
    /// Never returns `nil` before the deadline; a deadline already passed makes this a
    /// ``withLockIfAvailable(_:)``.
    /// - Returns: what `body` returns, or `nil` without running it when the deadline passed
    ///   before the lock was free.
    /// - Throws: what `body` throws, typed, after the lock has been released.
    @inlinable @inline(__always)
    public func withLock<R: ~Copyable, E: Error>(
        before deadline: ContinuousClock.Instant,
        _ body: (inout sending Value) throws(E) -> sending R
    ) throws(E) -> sending R? {
        guard _lock(before: deadline) else { return nil }
        defer { _unlock() }
        return .some(try body(&_valuePointer.pointee))
    }
}
