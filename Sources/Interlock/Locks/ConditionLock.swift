// ConditionLock: a mutex that carries an integer condition — the heir of Foundation's
// NSConditionLock. `lock(whenCondition: c)` waits until the mutex is free AND the condition
// is c; `unlock(withCondition: n)` releases it and sets the condition to n.
//
// Algorithm: a `_MutexWord` (Drepper's three-state futex mutex, MutexWord.swift) plus a FIFO
// list of waiter records, protected by that mutex, in the manner of parking_lot's wait queue
// and of the Linux kernel's wait queues. Each waiter parks on a futex word of its OWN record
// (on its stack), so an unlock wakes exactly one thread that waits for the new condition:
// threads waiting for other values never wake (no thundering herd, no polling). The
// alternative — one sequence word broadcast on every change — wakes every waiter on every
// unlock; the hand-off benchmark (ConditionBenchmarks, "ConditionLock hand-off") measures
// both, see the README table. Before sleeping, a waiter spins on its record's word for an
// adaptive window (AdaptiveSpin.swift) when at most one other thread waits, and announces
// that it sleeps by moving its word from 0 to 2, so that an unlock hands a spinning waiter
// its turn with one store and no system call (measured: a two-thread hand-off went from
// 14-20 us, a kernel wake-up of an idle virtual CPU per hand-off, to 0.08-0.10 us).
//
// State (one struct, the first stored property of the object):
//
//   field      type          protected by          meaning
//   ---------  ------------  --------------------  --------------------------------------
//   mutex      UInt32        atomic (_MutexWord)   0 free, 1 held, 2 held + maybe parked
//   nameGuard  UInt32        atomic                guard of `name` (LockSupport.swift)
//   condition  Int           written under mutex;  the integer condition
//                            read atomically
//   head/tail  waiter ptrs   the mutex             FIFO of threads waiting for a condition
//   waiterCount Int          the mutex             records listed
//   spinWindow UInt32        atomic (relaxed)      adaptive spin window, ns (AdaptiveSpin.swift)
//
// Waiter record (on the waiting thread's stack, alive until it returns):
//
//   word       UInt32   0 = listed and waiting (spinning); 2 = listed and asleep, or about to
//                       be (set by the waiter, CAS 0 -> 2); 1 = removed from the list by an
//                       unlocker, which hands it the wake-up (exchange to 1 under the mutex)
//   condition  Int      the value it waits for
//   next       pointer  the list link (under the mutex)
//
// Waiting for c (with the mutex held and condition != c):
//   1. append the record (word 0); note whether at most 2 records are listed; release the
//      mutex (no wake: nothing changed)
//   2. if at most 2 were listed, spin while the word reads 0 (adaptive window); then CAS the
//      word 0 -> 2 and futex-wait while it reads 2 (until the deadline, if any)
//   3. take the mutex; if the record is still listed (timed out, never handed a wake),
//      unlink it
//   4. condition == c: done, holding the mutex — even when the deadline has passed, since a
//      thread that was handed a wake must not drop it. Timed out: release, return false.
//      Otherwise go back to 1.
//
// Unlocking with n (unlock() is unlock(withCondition: condition)):
//   condition = n; unlink the FIRST record waiting for n, if any, and exchange its word to 1;
//   release the mutex; if the word was 2 (its thread sleeps), futex-wake that record's word.
//
// Invariants:
//   - Listed records belong to threads in steps 1–3; a record leaves the list under the mutex,
//     either by an unlocker (word set to 1 at the same time) or by its own timed-out thread.
//   - No lost wake-up: a thread waits for c only after seeing condition != c under the
//     mutex, and the condition changes only in a user unlock, which hands a wake to one
//     waiter for the new value if there is one. That waiter, once it has the mutex again,
//     either finds the condition still c and takes the lock (whose later unlock hands the
//     next wake), or finds that someone else took the lock meanwhile — whose unlock, again,
//     hands the next wake. A waiter that times out after being handed a wake takes the lock
//     when the condition is c (step 4), so a timeout never swallows a wake.
//   - Internal releases of the mutex (in step 1, and in a failed `tryLock(whenCondition:)`)
//     change nothing and hand out no wake: any waiter still owed one already has it.
//   - A futex-wake may reach a record whose thread saw word 1 without sleeping and has
//     returned; the wake then lands on a dead stack address, which at worst is a spurious
//     wake-up of whichever futex lives there later, and every futex wait here re-checks.
//     The wake is made after the mutex is released so the woken thread finds it free.
//
// Memory ordering:
//   - The mutex orders everything protected by it: acquire on lock, release on unlock.
//   - `condition`: stored with release under the mutex; the public getter loads it with
//     acquire (a snapshot outside the lock pairs with the store that wrote it); loads under
//     the mutex are relaxed, the mutex's acquire orders them.
//   - Record `word`: the unlocker's exchange to 1 is a release, the waiter's polling load an
//     acquire; the waiter reads the rest of its record only after taking the mutex, whose
//     acquire pairs with the unlocker's release of it. The waiter's CAS 0 -> 2 is relaxed: it
//     publishes nothing, and both sides act on one word, so its single modification order
//     decides: either the CAS comes first and the unlocker's exchange returns 2 (and wakes),
//     or the exchange comes first and the CAS fails (the waiter does not sleep).
//   - `spinWindow`: relaxed, a heuristic.
//   - No standalone fences; ThreadSanitizer sees every edge.

import CInterlock

/// A waiter record of ``ConditionLock``: lives on the waiting thread's stack.
@usableFromInline
internal struct _ConditionLockWaiter {
    /// 0 while listed and waiting (spinning); 2 while listed and asleep (or about to be);
    /// 1 once an unlocker has unlinked it and handed it a wake.
    @usableFromInline var word: UInt32
    /// The condition value the thread waits for.
    @usableFromInline var condition: Int
    /// The next record in FIFO order (protected by the mutex).
    @usableFromInline var next: UnsafeMutablePointer<_ConditionLockWaiter>?

    @inlinable
    init(condition: Int) {
        word = 0
        self.condition = condition
        next = nil
    }
}

/// The state words of ``ConditionLock`` (see the file comment).
@usableFromInline
internal struct _ConditionLockState {
    @usableFromInline var mutex: UInt32 = 0
    @usableFromInline var nameGuard: UInt32 = 0
    @usableFromInline var condition: Int
    @usableFromInline var head: UnsafeMutablePointer<_ConditionLockWaiter>? = nil
    @usableFromInline var tail: UnsafeMutablePointer<_ConditionLockWaiter>? = nil
    @usableFromInline var waiterCount: Int = 0
    @usableFromInline var spinWindow: UInt32 = _AdaptiveSpin.initialWindow

    @inlinable
    init(condition: Int) { self.condition = condition }
}

/// A mutex that carries an integer condition: the heir of Foundation's `NSConditionLock`.
///
/// Use it to hand work from thread to thread in a fixed order: a thread takes the lock
/// when the condition has the value it waits for, and sets the next value as it unlocks.
///
/// ```swift
/// let stage = ConditionLock(condition: 0)
/// // thread A                                  // thread B
/// stage.lock(whenCondition: 0)                 stage.lock(whenCondition: 1)
/// produce()                                    consume()
/// stage.unlock(withCondition: 1)               stage.unlock(withCondition: 0)
/// ```
///
/// An unlock wakes one thread waiting for the new condition, and only such a thread: threads
/// waiting for other values stay asleep. ``lock()`` and ``tryLock()`` take the lock whatever
/// the condition; ``unlock()`` keeps the condition as it is.
///
/// - Warning: Unlocking a condition lock that is not locked traps with a message naming it
///   (its ``name`` when set). The lock is not recursive, and the thread that locks must be
///   the one that unlocks.
public final class ConditionLock: Locking, @unchecked Sendable {
    // Read and written only through the field pointers below after init; the first stored
    // property, so at a fixed offset of the object's one allocation.
    @usableFromInline internal var _storage: _ConditionLockState
    // Guarded by the `nameGuard` word; never touched on a hot path.
    @usableFromInline internal var _name: String?

    /// Creates an unlocked condition lock holding `condition`.
    public init(condition: Int = 0) {
        _storage = _ConditionLockState(condition: condition)
        _name = nil
    }

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// The address of a field of the state: fixed for the object's lifetime. Fields are reached
    /// one by one through their own addresses, never through a pointer to the whole state,
    /// so that no access can cover the mutex word beside them (ThreadSanitizer would rightly
    /// report one against the mutex's atomics).
    @inlinable @inline(__always)
    internal func _field<T>(_ field: KeyPath<_ConditionLockState, T>, as type: T.Type) -> UnsafeMutablePointer<T> {
        _stateField(of: self, field, as: type)
    }

    @inlinable @inline(__always) internal var _mutex: UnsafeMutablePointer<UInt32> { _field(\.mutex, as: UInt32.self) }
    @inlinable @inline(__always) internal var _conditionWord: UnsafeMutablePointer<Int> {
        _field(\.condition, as: Int.self)
    }
    /// Read and written only under the mutex.
    @inlinable @inline(__always) internal var _waiterCount: UnsafeMutablePointer<Int> {
        _field(\.waiterCount, as: Int.self)
    }
    @inlinable @inline(__always) internal var _spinWindowWord: UnsafeMutablePointer<UInt32> {
        _field(\.spinWindow, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _nameGuard: UnsafeMutablePointer<UInt32> {
        _field(\.nameGuard, as: UInt32.self)
    }
    /// The waiter list's ends: read and written only under the mutex.
    @inlinable @inline(__always) internal var _head: UnsafeMutablePointer<UnsafeMutablePointer<_ConditionLockWaiter>?> {
        _field(\.head, as: UnsafeMutablePointer<_ConditionLockWaiter>?.self)
    }
    @inlinable @inline(__always) internal var _tail: UnsafeMutablePointer<UnsafeMutablePointer<_ConditionLockWaiter>?> {
        _field(\.tail, as: UnsafeMutablePointer<_ConditionLockWaiter>?.self)
    }

    /// The current condition: a snapshot, which may change as soon as it is read unless the
    /// caller holds the lock.
    public var condition: Int {
        // Acquire: pairs with the release store of the unlock that set it.
        ilk_atomic_load_iptr(_conditionWord, ILK_ORDER_ACQUIRE)
    }

    /// A name for diagnostics (trap messages); `nil` until set. Safe from any thread.
    public var name: String? {
        get { _LockNameGuard.withGuard(_nameGuard) { _name } }
        set {
            _LockNameGuard.store(newValue, _nameGuard) {
                let old = _name; _name = $0; return old
            }
        }
    }

    // MARK: - Locking

    /// Blocks until the calling thread holds the lock, whatever the condition.
    @inlinable @inline(__always)
    public func lock() {
        _LockOrder.willLock(self, .conditionLock)
        #if INTERLOCK_CONTENTION
        _MutexWord.lock(_mutex, for: .conditionLock, profiling: self, .conditionLock)
        #else
        _MutexWord.lock(_mutex, for: .conditionLock)
        #endif
        _LockOrder.didLock(self, .conditionLock)
    }

    /// Takes the lock if it is free at once, whatever the condition.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable @inline(__always)
    public func tryLock() -> Bool {
        let taken = _MutexWord.tryLock(_mutex)
        if taken { _LockOrder.didLock(self, .conditionLock) }
        return taken
    }

    /// Takes the lock before `deadline`, whatever the condition.
    /// - Returns: `false` when the deadline passed first (never before it); a deadline already
    ///   passed makes this a ``tryLock()``.
    @inlinable
    public func lock(before deadline: ContinuousClock.Instant) -> Bool {
        #if INTERLOCK_CONTENTION
        let taken = _MutexWord.lock(_mutex, before: deadline, for: .conditionLock, profiling: self, .conditionLock)
        #else
        let taken = _MutexWord.lock(_mutex, before: deadline, for: .conditionLock)
        #endif
        if taken { _LockOrder.didLock(self, .conditionLock) }
        return taken
    }

    /// Blocks until the lock is free and its condition equals `condition`, then takes it.
    @inlinable
    public func lock(whenCondition condition: Int) {
        _LockOrder.willLock(self, .conditionLock)
        #if INTERLOCK_CONTENTION
        _MutexWord.lock(_mutex, for: .conditionLock, profiling: self, .conditionLock)
        #else
        _MutexWord.lock(_mutex, for: .conditionLock)
        #endif
        // Relaxed: read under the mutex, whose acquire orders it.
        if _fastPath(ilk_atomic_load_iptr(_conditionWord, ILK_ORDER_RELAXED) == condition) {
            _LockOrder.didLock(self, .conditionLock)
            return
        }
        _waitForConditionUntimed(condition)
        _LockOrder.didLock(self, .conditionLock)
    }

    /// Takes the lock if it is free at once and its condition equals `condition`.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable
    public func tryLock(whenCondition condition: Int) -> Bool {
        guard _MutexWord.tryLock(_mutex) else { return false }
        // Relaxed: read under the mutex.
        if ilk_atomic_load_iptr(_conditionWord, ILK_ORDER_RELAXED) == condition {
            _LockOrder.didLock(self, .conditionLock)
            return true
        }
        // Nothing changed: release without handing out a wake (file comment, invariants).
        _ = _MutexWord.unlock(_mutex, for: .conditionLock)
        return false
    }

    /// Takes the lock when it is free and its condition equals `condition`, waiting until
    /// `deadline` at the latest.
    /// - Returns: `false` when the deadline passed first (never before it); a deadline already
    ///   passed makes this a ``tryLock(whenCondition:)``.
    @inlinable
    public func lock(whenCondition condition: Int, before deadline: ContinuousClock.Instant) -> Bool {
        #if INTERLOCK_CONTENTION
        let locked = _MutexWord.lock(
            _mutex, before: deadline, for: .conditionLock, profiling: self, .conditionLock)
        #else
        let locked = _MutexWord.lock(_mutex, before: deadline, for: .conditionLock)
        #endif
        guard locked else { return false }
        // Relaxed: read under the mutex.
        if ilk_atomic_load_iptr(_conditionWord, ILK_ORDER_RELAXED) == condition {
            _LockOrder.didLock(self, .conditionLock)
            return true
        }
        if ContinuousClock.now >= deadline {
            _ = _MutexWord.unlock(_mutex, for: .conditionLock)
            return false
        }
        let taken = _waitForCondition(condition, deadline: deadline)
        if taken { _LockOrder.didLock(self, .conditionLock) }
        return taken
    }

    /// Releases the lock, keeping the condition; wakes a thread waiting for that condition.
    ///
    /// - Warning: Traps, naming the lock, when it is not locked.
    @inlinable
    public func unlock() {
        _checkLocked("unlock()")
        _LockOrder.didUnlock(self)
        // Relaxed: read under the mutex.
        _unlock(setting: ilk_atomic_load_iptr(_conditionWord, ILK_ORDER_RELAXED))
    }

    /// Sets the condition to `condition` and releases the lock; wakes one thread waiting for
    /// that condition, if any.
    ///
    /// - Warning: Traps, naming the lock, when it is not locked.
    @inlinable
    public func unlock(withCondition condition: Int) {
        _checkLocked("unlock(withCondition:)")
        _LockOrder.didUnlock(self)
        _unlock(setting: condition)
    }

    // MARK: - Internals

    @inlinable @inline(__always)
    internal func _checkLocked(_ operation: StaticString) {
        if _slowPath(!_MutexWord.isLocked(_mutex)) { _trapNotLocked(operation) }
    }

    /// The user-level unlock: set the condition, hand a wake to the first waiter for it.
    @inlinable @inline(__always)
    internal func _unlock(setting condition: Int) {
        // Release: pairs with the acquire of the public `condition` getter.
        ilk_atomic_store_iptr(_conditionWord, condition, ILK_ORDER_RELEASE)
        if _fastPath(_head.pointee == nil) {
            _ = _MutexWord.unlock(_mutex, for: .conditionLock)
            return
        }
        _unlockHandingOff(condition)
    }

    /// Unlocks when waiters are listed: unlink the first for `condition`, release, wake it.
    @usableFromInline @inline(never)
    internal func _unlockHandingOff(_ condition: Int) {
        var previous: UnsafeMutablePointer<_ConditionLockWaiter>? = nil
        var current = _head.pointee
        while let record = current, record.pointee.condition != condition {
            previous = record
            current = record.pointee.next
        }
        guard let chosen = current else {
            _ = _MutexWord.unlock(_mutex, for: .conditionLock)
            return
        }
        _unlink(chosen, after: previous)
        let word = UnsafeMutableRawPointer(chosen)
            .advanced(by: MemoryLayout<_ConditionLockWaiter>.offset(of: \.word)!)
            .assumingMemoryBound(to: UInt32.self)
        // Release: pairs with the waiter's acquire poll; the record is untouched by us after.
        let asleep = ilk_atomic_exchange_u32(word, 1, ILK_ORDER_RELEASE) == 2
        _ = _MutexWord.unlock(_mutex, for: .conditionLock)
        // After the release, so the woken thread finds the mutex free; only for a waiter that
        // went to sleep (a spinning one sees the 1). May land on a dead stack address: at
        // worst a spurious wake (file comment, invariants); a private wake never touches the
        // page, so even an unmapped one is not an EFAULT.
        if asleep { _Futex.wakeOne(word, for: .conditionLock) }
    }

    /// Removes `record` from the list; `previous` is its predecessor (nil when it is the head).
    @usableFromInline
    internal func _unlink(
        _ record: UnsafeMutablePointer<_ConditionLockWaiter>,
        after previous: UnsafeMutablePointer<_ConditionLockWaiter>?
    ) {
        let next = record.pointee.next
        if let previous { previous.pointee.next = next } else { _head.pointee = next }
        if _tail.pointee == record { _tail.pointee = previous }
        record.pointee.next = nil
        _waiterCount.pointee -= 1
    }

    /// `_waitForCondition` without a deadline, for lock(whenCondition:)'s inlined fast path.
    // Untimed: an inlined fast path that passed `deadline: nil` would build and destroy an
    // Optional<ContinuousClock.Instant> through its value witnesses on every call, fast path
    // included (ReadWriteLockSlowPaths.swift has the figure).
    @usableFromInline @inline(never)
    internal func _waitForConditionUntimed(_ condition: Int) { _ = _waitForCondition(condition, deadline: nil) }

    /// Called holding the mutex with the condition != `condition`. Returns `true` holding the
    /// mutex with the condition == `condition`, or `false` (deadline passed) not holding it.
    @usableFromInline @inline(never)
    internal func _waitForCondition(_ condition: Int, deadline: ContinuousClock.Instant?) -> Bool {
        #if INTERLOCK_CONTENTION
        // The wait for the condition is this acquisition's contention (ContentionRecorder.swift).
        let probe = _Contention.begin()
        let taken = _awaitCondition(condition, deadline: deadline)
        if probe != 0 && taken { _Contention.end(probe, .conditionLockWhen, self, hold: _mutex) }
        return taken
        #else
        return _awaitCondition(condition, deadline: deadline)
        #endif
    }

    /// `_waitForCondition`'s loop (the file comment's steps 1 to 4).
    internal func _awaitCondition(_ condition: Int, deadline: ContinuousClock.Instant?) -> Bool {
        withUnsafeTemporaryAllocation(of: _ConditionLockWaiter.self, capacity: 1) { buffer in
            // SAFETY: the record lives on this stack frame until the closure returns; it is
            // listed only between step 1 and step 3, always unlinked (under the mutex) before
            // the closure returns, so no other thread touches it after that, bar a futex wake
            // on its address (harmless, file comment).
            let record = buffer.baseAddress!
            let word = UnsafeMutableRawPointer(record)
                .advanced(by: MemoryLayout<_ConditionLockWaiter>.offset(of: \.word)!)
                .assumingMemoryBound(to: UInt32.self)
            let head = _head, tail = _tail
            while true {
                // Step 1 (holding the mutex).
                record.initialize(to: _ConditionLockWaiter(condition: condition))
                if let last = tail.pointee { last.pointee.next = record } else { head.pointee = record }
                tail.pointee = record
                let waiterCount = _waiterCount
                waiterCount.pointee += 1
                // Spin only while at most one other thread waits: with more, spinners would
                // take the cores that the holder needs (AdaptiveSpin.swift).
                let spinning = waiterCount.pointee <= _conditionSpinMaxWaiters
                _ = _MutexWord.unlock(_mutex, for: .conditionLock)

                // Step 2: spin, then sleep, until an unlocker hands us a wake (word 1).
                let timedOut = _HandOff.await(
                    word, spinning: spinning, deadline: deadline, spinWindow: _spinWindowWord, for: .conditionLock)
                // Step 3.
                _MutexWord.lock(_mutex, for: .conditionLock)
                // Relaxed: under the mutex; every store of 1 was made under it.
                if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) != 1 {
                    _unlinkListed(record)
                }
                record.deinitialize(count: 1)

                // Step 4. Relaxed: read under the mutex.
                if ilk_atomic_load_iptr(_conditionWord, ILK_ORDER_RELAXED) == condition { return true }
                if timedOut {
                    _ = _MutexWord.unlock(_mutex, for: .conditionLock)
                    return false
                }
            }
        }
    }

    /// Unlinks a record that is known to be listed (its thread timed out).
    @usableFromInline
    internal func _unlinkListed(_ record: UnsafeMutablePointer<_ConditionLockWaiter>) {
        var previous: UnsafeMutablePointer<_ConditionLockWaiter>? = nil
        var current = _head.pointee
        while let candidate = current, candidate != record {
            previous = candidate
            current = candidate.pointee.next
        }
        precondition(current != nil, "ConditionLock: internal error, waiter record not listed")
        _unlink(record, after: previous)
    }

    @usableFromInline @inline(never)
    internal func _trapNotLocked(_ operation: StaticString) -> Never {
        _lockMisuse("ConditionLock", name: name, "\(operation) called while it is not locked")
    }
}
