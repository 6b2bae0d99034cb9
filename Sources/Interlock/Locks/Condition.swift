// Condition: a mutex and a condition variable in one object — the heir of Foundation's
// NSCondition — on two futex words of the same allocation.
//
// Algorithm: the mutex is `_MutexWord` (Drepper's three-state futex mutex, MutexWord.swift).
// The condition is a futex SEQUENCE word, as in Drepper's "Futexes Are Tricky" (2011, §6) and
// the pre-2.25 glibc condition variable: a waiter reads the sequence while it still holds the
// mutex, releases the mutex, and sleeps on the sequence word expecting the value it read; a
// signal increments the word and wakes one sleeper, so a waiter that has not reached the
// kernel yet finds the value changed and does not sleep. Broadcast increments the word and
// moves the sleepers onto the mutex word with FUTEX_CMP_REQUEUE instead of waking them all
// (glibc's requeue broadcast): the unlocks of the mutex then wake them one at a time, so they
// do not stampede onto a mutex only one of them can hold.
//
// Spinning before sleeping (AdaptiveSpin.swift): a waiter first spins on the sequence for an
// adaptive window (learned per condition from how long its recent waits took, 1-50 us), and
// only then sleeps; it is counted in `sleepers` just before the futex wait, so a signal that
// finds nobody asleep makes no system call. A waiter woken by a signal takes the mutex as any
// locker does (one CAS, the mutex's bounded spin, then parking), so that its own unlock makes
// no system call either. A waiter spins only while at most one other thread waits
// (`_conditionSpinMaxWaiters`): the hand-over of a ping-pong, where the partner just signalled
// may still be counted; with more waiters (a broadcast to a crowd), spinners would take the
// cores that the thread they wait for needs, so they sleep at once.
//
// Deciding figure: a two-thread ping-pong costs about 0.2 us per round trip with the adaptive
// window, against 40-54 us for pthread's condvar. The runs behind the fixed-spin and waiter-limit
// choices are in Benchmarks/README.md, "Design measurements".

// State (one struct, the first stored property of the object, at a fixed address). The mutex
// and the sequence share a cache line on purpose: every hand-off touches both (the signaller
// bumps the sequence under the mutex; the woken waiter takes the mutex), so separate lines
// would move two lines instead of one. Not measured separately.
//
//   field         bits  written by                        meaning
//   ------------  ----  --------------------------------  ---------------------------------
//   mutex          32   _MutexWord                        0 free, 1 held, 2 held + maybe parked
//   owner          32   the holder, after taking and      thread id of the holder, 0 if none
//                       before releasing the mutex
//   waiters        32   wait: +1 before releasing the     threads that may sleep on the
//                       mutex, -1 once awake              sequence (an upper bound)
//   nameGuard      32   the `name` accessors              0 free, 1 busy (LockSupport.swift)
//   sleepers       32   wait: +1 before the futex wait,   threads that may be asleep on the
//                       -1 after it                       sequence (an upper bound)
//   spinWindow     32   waiters (relaxed)                 adaptive spin window, ns
//                                                         (AdaptiveSpin.swift)
//   sequence       64   signal and broadcast: +1          the condition; the futex word is
//                                                         its low 32 bits
//   lastRequeued   64   broadcast, before its requeue     the highest sequence value a
//                       (monotonic: a CAS-max)            requeue was made at
//
// Waiting, step by step (the lock held on entry, checked through `owner`):
//   1. waiters += 1; s = sequence          — both before the mutex is released
//   2. owner = 0; unlock the mutex
//   3. spin while sequence == s (adaptive window; only with <= 2 waiters); if it changed, skip
//      to 4. Otherwise sleepers += 1; futex-wait(low half of the sequence, low half of s);
//      sleepers -= 1
//   4. waiters -= 1
//   5. take the mutex. A thread that a broadcast requeued onto the mutex word and that an
//      unlock then woke has consumed that unlock's wake-up: it must take the mutex with
//      `lockContended`, which leaves the word at 2, so that its own unlock wakes the next
//      requeued thread. It knows it may be one when the wait returned "woken" and
//      `lastRequeued >= s` (some requeue ran after it read s). Every other thread — woken by
//      a signal, never asleep, timed out (ETIMEDOUT means no wake was consumed) — takes the
//      mutex as any locker does: one CAS 0 -> 1 (so its unlock makes no system call), the
//      mutex's bounded spin, then parking.
//   6. owner = me
//
// Invariants:
//   - A thread counted in `waiters` either has not yet slept, spins, sleeps on the sequence,
//     sleeps on the mutex word (requeued), or is between waking and decrementing. So
//     `waiters == 0` means nobody can be asleep on the sequence: signal and broadcast then
//     make no system call.
//   - A thread asleep (or about to be) on the sequence is counted in `sleepers`. A signaller
//     increments the sequence, then reads `sleepers`; a waiter increments `sleepers`, then
//     the kernel compares the sequence. Both are sequentially consistent read-modify-writes
//     followed by a read of the other word (Dekker): either the signaller sees the waiter
//     counted and wakes, or the waiter's futex wait sees the new sequence and returns. So a
//     signal that reads `sleepers == 0` may skip the system call: a spinning waiter sees the
//     new sequence itself.
//   - No lost wake-up: a waiter reads the sequence and counts itself before releasing the
//     mutex. A signaller that changed the predicate under the mutex after that release took
//     the mutex after the waiter released it, so it sees the waiter counted, and its increment
//     of the sequence comes after the waiter's read in the word's modification order; the
//     kernel compares the word with s and queues the waiter atomically with respect to the
//     wake, so either the wait fails with "value changed" or the wake finds the waiter queued.
//   - Broadcast that reads `sleepers == 0` after its increment moves nobody (the Dekker
//     pairing above: every waiter not counted sees the new sequence itself).
//   - Broadcast: the threads moved onto the mutex word must find it at 2 so that an unlock
//     wakes them. When the broadcaster holds the mutex (the usual case, checked through
//     `owner`), it marks the word 2 before requeuing and wakes nobody: the first wake happens
//     at its unlock, when the mutex is free. When it does not hold the mutex, the requeue
//     wakes one thread and moves the rest; that thread sees `lastRequeued >= s` and takes the
//     mutex with `lockContended`, writing 2 after the requeue, so the unlock of whoever holds
//     the mutex then wakes the next one. Each requeued thread woken by an unlock does the same,
//     so the chain of wakes goes on to the last (Drepper's invariant: a parked thread implies
//     word 2). A requeued thread that times out consumed no wake and owes none.
//   - `lastRequeued >= s` holds for every thread a requeue moved: the requeue compares the word
//     with the broadcaster's own increment `c`, so a moved thread read s <= c, and
//     `lastRequeued` is raised to at least c before the system call. A 64-bit sequence makes
//     the comparison exact (no wrap-around). The reverse may fail (a thread woken by a signal
//     while a broadcast ran) and only costs that thread an extra wake call at its unlock.
//   - A requeue that fails because the sequence moved again (a concurrent signal by a thread
//     not holding the mutex) falls back to waking every sleeper; correctness never depends
//     on the requeue.
//   - `owner` is written only by the thread that holds the mutex (itself, or 0 before it
//     releases). A thread reads its own id there exactly when it holds the mutex, so the
//     "wait without the lock" check is one relaxed load.
//   - The futex compares 32 bits: a waiter that reads s and then sleeps through exactly 2^32
//     signals before reaching the kernel would miss one. Accepted, as in glibc.
//
// Memory ordering:
//   - The mutex orders the user's data: `_MutexWord`'s acquire on lock, release on unlock.
//   - `sleepers`: the increment and the signaller's load are sequentially consistent (the
//     Dekker pairing above, with the signaller's seq_cst increment of the sequence and the
//     kernel's compare, which futex_wait makes after a full barrier, smp_mb() once it has
//     queued the waiter on its hash bucket, on every architecture); the decrement is
//     relaxed (it lowers an upper bound: a stale value costs one wake call for nobody).
//   - `spinWindow`: relaxed, a heuristic (AdaptiveSpin.swift).
//   - Spinning reads of the sequence are relaxed: they only decide whether to sleep; the mutex,
//     re-taken next, orders the user's data.
//   - `waiters`: the increment and the signaller's load are sequentially consistent; the
//     increment is sequenced before the release of the mutex and the load after the
//     signaller's acquire of it, which alone makes the count visible. This argument, like the
//     no-lost-wake-up invariant above, rests on the signaller changing the predicate while
//     holding the mutex: a waiter checks its predicate before it counts itself in `waiters`
//     and reads the sequence, so a signaller that publishes the predicate with an atomic
//     store and signals without the mutex can do both in that gap, read `waiters` (or the
//     sequence the waiter is about to read) before the waiter's increment, skip the wake, and
//     leave the waiter asleep on a predicate that is already true. No ordering can close that
//     gap, which is why the public rule is "change the predicate under the lock". The
//     decrement is relaxed: it only lowers an upper bound once the thread no longer sleeps; a
//     signaller that reads the stale higher value makes one harmless wake call for nobody.
//   - `sequence`: the waiter's load is relaxed, made under the mutex (every increment that
//     must be seen comes from a signaller that took the mutex after us; coherence does the
//     rest). The increments are sequentially consistent read-modify-writes, ordered after
//     the `waiters` load.
//   - `lastRequeued`: raised with a seq_cst CAS before the requeue system call, read with
//     seq_cst after the wait. A requeued thread is woken by that system call or by a later
//     FUTEX_WAKE on the mutex word; the kernel orders both after the raise (a wake-up implies
//     a full barrier, Documentation/memory-barriers.txt, "Sleep and wake-up functions"), so
//     the woken thread reads the raised value. This is the one place where an ordering comes
//     from the kernel; it decides only how the mutex is re-taken, never what data is seen.
//   - `owner`: relaxed loads and stores. Only the holder writes it, and a thread compares it
//     only with its own id, which only it writes and which it clears before releasing the
//     mutex (coherence within one thread).
//   - No standalone fences anywhere: ThreadSanitizer sees every data edge on the mutex word.

import CInterlock
import Synchronization

/// Waiters (this one included) above which a waiter sleeps at once instead of spinning.
@usableFromInline internal let _conditionSpinMaxWaiters: UInt32 = 2

/// The state of a ``Condition`` (see the file comment for the table).
@usableFromInline
internal struct _ConditionState {
    @usableFromInline var mutex: UInt32 = 0
    @usableFromInline var owner: UInt32 = 0
    @usableFromInline var waiters: UInt32 = 0
    @usableFromInline var nameGuard: UInt32 = 0
    @usableFromInline var sleepers: UInt32 = 0
    @usableFromInline var spinWindow: UInt32 = _AdaptiveSpin.initialWindow
    // Starts above `lastRequeued`, so no thread believes itself requeued before any broadcast.
    @usableFromInline var sequence: UInt64 = 1
    @usableFromInline var lastRequeued: UInt64 = 0

    @inlinable init() {}
}

/// A mutex and a condition variable in one object: the heir of Foundation's `NSCondition`.
///
/// Lock it, check your predicate in a loop and ``wait()`` while it is false; another thread
/// changes the predicate while holding the lock and then calls ``signal()`` (wake one waiter)
/// or ``broadcast()`` (wake all), with the lock held or after releasing it:
///
/// ```swift
/// condition.lock()
/// while !ready { condition.wait() }
/// condition.unlock()
/// ```
///
/// Waits may return spuriously, so always re-check the predicate in a loop.
///
/// - Important: Change the predicate only while holding the lock. A change published some
///   other way (an atomic store, then a signal without the lock) can fall between a waiter's
///   check of the predicate and its wait, and that waiter is then never woken.
///
/// Built on futexes: the uncontended lock is one compare-and-swap, the unlock one decrement;
/// ``signal()`` and ``broadcast()`` make no system call when nobody sleeps; ``broadcast()``
/// moves the sleepers onto the mutex (FUTEX_CMP_REQUEUE) so that they take it one after the
/// other instead of all waking at once. A waiter spins briefly before it sleeps, for a window
/// learned from how long recent waits on this condition took (at most 50 µs), so that threads
/// handing work back and forth do not pay a kernel wake-up per hand-off; while the machine's
/// cores are oversubscribed (other work shares them), it sleeps at once, since the thread it
/// waits for is then often not running.
///
/// - Warning: ``wait()`` and ``wait(until:)`` trap when the calling thread does not hold the
///   lock, and ``unlock()`` traps when the calling thread does not hold it, naming the
///   condition (its ``name`` when set). The lock is not recursive.
/// - Important: Across `fork()` without exec, the child's one thread has a new thread id, so
///   a condition whose lock was held at the fork (by any thread) stays held, in the child, by
///   a thread that does not exist there: ``tryLock()`` fails, ``lock()`` waits forever, and
///   ``unlock()``, ``wait()`` and ``wait(until:)`` trap ("called by a thread that does not hold
///   the lock (another thread holds it)"), as glibc's error-checking mutex refuses the child's
///   unlock with EPERM. A condition whose lock nobody held at the fork works in the child.
public final class Condition: Locking, @unchecked Sendable {
    // Read and written only through the field pointers below after init; the first stored
    // property, so at a fixed offset of the object's one allocation.
    @usableFromInline internal var _storage: _ConditionState
    // Guarded by the `nameGuard` word; never touched on a hot path.
    @usableFromInline internal var _name: String?

    /// Creates an unlocked condition with no name.
    public init() {
        _storage = _ConditionState()
        _name = nil
    }

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// The address of a field of the state: fixed for the object's lifetime.
    @inlinable @inline(__always)
    internal func _field<T>(_ field: KeyPath<_ConditionState, T>, as type: T.Type) -> UnsafeMutablePointer<T> {
        _stateField(of: self, field, as: type)
    }

    @inlinable @inline(__always) internal var _mutex: UnsafeMutablePointer<UInt32> { _field(\.mutex, as: UInt32.self) }
    @inlinable @inline(__always) internal var _owner: UnsafeMutablePointer<UInt32> { _field(\.owner, as: UInt32.self) }
    @inlinable @inline(__always) internal var _waiters: UnsafeMutablePointer<UInt32> {
        _field(\.waiters, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _sleepers: UnsafeMutablePointer<UInt32> {
        _field(\.sleepers, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _spinWindow: UnsafeMutablePointer<UInt32> {
        _field(\.spinWindow, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _sequence: UnsafeMutablePointer<UInt64> {
        _field(\.sequence, as: UInt64.self)
    }
    @inlinable @inline(__always) internal var _lastRequeued: UnsafeMutablePointer<UInt64> {
        _field(\.lastRequeued, as: UInt64.self)
    }

    /// The futex word: the low 32 bits of the sequence. Only ever handed to the kernel.
    @inlinable @inline(__always)
    internal var _futexWord: UnsafeMutablePointer<UInt32> {
        // SAFETY: 8-byte aligned 64-bit field; its low half is a 4-byte aligned 32-bit word
        // (first on little-endian machines). Swift never dereferences this pointer: only the
        // futex system calls read it.
        #if _endian(little)
        UnsafeMutableRawPointer(_sequence).assumingMemoryBound(to: UInt32.self)
        #else
        (UnsafeMutableRawPointer(_sequence) + 4).assumingMemoryBound(to: UInt32.self)
        #endif
    }

    /// A name for diagnostics (trap messages); `nil` until set. Safe from any thread.
    public var name: String? {
        get { _LockNameGuard.withGuard(_field(\.nameGuard, as: UInt32.self)) { _name } }
        set {
            _LockNameGuard.store(newValue, _field(\.nameGuard, as: UInt32.self)) {
                let old = _name; _name = $0; return old
            }
        }
    }

    // MARK: - Locking

    /// Blocks until the calling thread holds the lock.
    @inlinable @inline(__always)
    public func lock() {
        _LockOrder.willLock(self, .condition)
        #if INTERLOCK_CONTENTION
        _MutexWord.lock(_mutex, for: .condition, profiling: self, .condition)
        #else
        _MutexWord.lock(_mutex, for: .condition)
        #endif
        // Relaxed: read back only by this thread (see the file comment).
        _Word32.atomic(_owner).pointee.store(ilk_current_thread_id(), ordering: .relaxed)
        _LockOrder.didLock(self, .condition)
    }

    /// Takes the lock if it is free at once.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable @inline(__always)
    public func tryLock() -> Bool {
        guard _MutexWord.tryLock(_mutex) else { return false }
        // Relaxed: read back only by this thread.
        _Word32.atomic(_owner).pointee.store(ilk_current_thread_id(), ordering: .relaxed)
        _LockOrder.didLock(self, .condition)
        return true
    }

    /// Releases the lock, which the calling thread must hold.
    ///
    /// - Warning: Traps, naming the condition, when the calling thread does not hold the lock.
    @inlinable @inline(__always)
    public func unlock() {
        let owner = _owner
        // Relaxed: the caller compares with its own id, which only it writes.
        if _slowPath(_Word32.atomic(owner).pointee.load(ordering: .relaxed) != ilk_current_thread_id()) {
            _trapNotHeld("unlock()")
        }
        _LockOrder.didUnlock(self)
        // Relaxed: cleared before the release below, so the next holder's write comes later.
        _Word32.atomic(owner).pointee.store(0, ordering: .relaxed)
        _ = _MutexWord.unlock(_mutex, for: .condition)
    }

    // MARK: - Waiting

    /// Releases the lock, sleeps until signalled, and takes the lock again before returning.
    ///
    /// May return spuriously: call it in a loop that re-checks your predicate.
    /// - Warning: Traps, naming the condition, when the calling thread does not hold the lock.
    @inlinable
    public func wait() {
        let me = _checkHeld("wait()")
        let observed = _enterWait()
        let result = _sleep(observed, deadline: nil)
        _leaveWait(result, observed, me)
    }

    /// Releases the lock and sleeps until signalled or until `deadline`, then takes the lock
    /// again before returning, in either case.
    ///
    /// A deadline already passed returns `false` at once, without releasing the lock.
    /// May return `true` spuriously: re-check your predicate in a loop.
    /// - Returns: `false` when the deadline passed first; never `false` before it.
    /// - Warning: Traps, naming the condition, when the calling thread does not hold the lock.
    @inlinable
    public func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let me = _checkHeld("wait(until:)")
        if ContinuousClock.now >= deadline { return false }
        let observed = _enterWait()
        let result = _sleep(observed, deadline: deadline)
        _leaveWait(result, observed, me)
        return result != .timedOut
    }

    /// Wakes at least one thread waiting on the condition, if any is.
    ///
    /// Change the predicate while holding the lock first; signalling while holding it or
    /// after unlocking are both correct. No system call when nobody waits.
    @inlinable
    public func signal() {
        // Seq_cst: see the file comment ("waiters").
        if _Word32.atomic(_waiters).pointee.load(ordering: .sequentiallyConsistent) == 0 { return }
        _signalSlow()
    }

    /// Wakes every thread waiting on the condition.
    ///
    /// The waiters are moved onto the lock and take it one after the other, rather than all
    /// waking at once. No system call when nobody waits.
    @inlinable
    public func broadcast() {
        // Seq_cst: see the file comment ("waiters").
        if _Word32.atomic(_waiters).pointee.load(ordering: .sequentiallyConsistent) == 0 { return }
        _broadcastSlow()
    }

    // MARK: - Slow paths

    /// Traps unless the calling thread holds the lock; returns the caller's thread id.
    @inlinable @inline(__always)
    internal func _checkHeld(_ operation: StaticString) -> UInt32 {
        let me = ilk_current_thread_id()
        // Relaxed: compared with the caller's own id, which only the caller writes.
        if _slowPath(ilk_atomic_load_u32(_owner, ILK_ORDER_RELAXED) != me) {
            _trapNotHeld(operation)
        }
        return me
    }

    /// Steps 1 and 2 of a wait: count in, read the sequence, release the mutex.
    /// - Returns: the sequence read.
    @usableFromInline
    internal func _enterWait() -> UInt64 {
        // Seq_cst: published to signallers before the mutex is released (file comment).
        _ = ilk_atomic_fetch_add_u32(_waiters, 1, ILK_ORDER_SEQ_CST)
        // Relaxed: read under the mutex; every increment that must wake us comes later in
        // the word's modification order (file comment).
        let observed = ilk_atomic_load_u64(_sequence, ILK_ORDER_RELAXED)
        // Relaxed: cleared before the release below.
        ilk_atomic_store_u32(_owner, 0, ILK_ORDER_RELAXED)
        _ = _MutexWord.unlock(_mutex, for: .condition)
        return observed
    }

    /// Step 3: spin while the sequence reads `observed` (AdaptiveSpin.swift), then sleep on it,
    /// counted in `sleepers` so that signallers know a system call is needed.
    /// - Returns: `.valueChanged` when the sequence moved during the spin (nobody woke us).
    @usableFromInline
    internal func _sleep(_ observed: UInt64, deadline: ContinuousClock.Instant?) -> _Futex.WaitResult {
        let windowWord = _spinWindow
        let window = _AdaptiveSpin.window(windowWord)
        let start = ilk_clock_monotonic_ns()
        // Spin only while at most one other thread waits (a hand-over: the waiter just
        // signalled may still be counted); with more, spinners would take the cores that the
        // thread they wait for needs (file comment; Benchmarks/README.md, "Design measurements").
        // Relaxed: a heuristic; any value is safe.
        if ilk_atomic_load_u32(_waiters, ILK_ORDER_RELAXED) <= _conditionSpinMaxWaiters {
            let sequence = _sequence
            // Relaxed: only decides whether to sleep; the mutex, re-taken next, orders data.
            if let elapsed = _AdaptiveSpin.spin(
                window: _AdaptiveSpin.window(window, before: deadline, at: start), start: start,
                while: {
                    ilk_atomic_load_u64(sequence, ILK_ORDER_RELAXED) == observed
                })
            {
                _AdaptiveSpin.learnFromSpin(windowWord, window: window, elapsed: elapsed)
                return .valueChanged
            }
        }
        // Seq_cst: pairs with the signaller's seq_cst increment of the sequence and load of
        // `sleepers` (file comment): either it sees us counted or our futex wait sees its
        // increment.
        _ = ilk_atomic_fetch_add_u32(_sleepers, 1, ILK_ORDER_SEQ_CST)
        let expected = UInt32(truncatingIfNeeded: observed)
        let result: _Futex.WaitResult
        if let deadline {
            result = _Futex.wait(_futexWord, expected: expected, until: deadline, for: .condition)
        } else {
            result = _Futex.wait(_futexWord, expected: expected, for: .condition)
        }
        // Relaxed: only lowers an upper bound; a signaller that reads the stale higher value
        // makes one wake call for nobody.
        _ = ilk_atomic_fetch_sub_u32(_sleepers, 1, ILK_ORDER_RELAXED)
        _AdaptiveSpin.learnFromSleep(
            windowWord, window: window, waited: ilk_clock_monotonic_ns() &- start,
            woken: result != .timedOut)
        return result
    }

    /// Steps 4 to 6 of a wait: count out, take the mutex back, record the owner.
    @usableFromInline
    internal func _leaveWait(_ result: _Futex.WaitResult, _ observed: UInt64, _ me: UInt32) {
        // Relaxed: only lowers an upper bound once this thread no longer sleeps.
        _ = ilk_atomic_fetch_sub_u32(_waiters, 1, ILK_ORDER_RELAXED)
        // Seq_cst: ordered after the requeue by the kernel's wake-up (file comment).
        let requeued = result == .woken && ilk_atomic_load_u64(_lastRequeued, ILK_ORDER_SEQ_CST) >= observed
        #if INTERLOCK_CONTENTION
        // Profiled: a re-acquisition that finds the mutex free records nothing; one that must
        // wait records its wait as Condition.reacquire (ContentionRecorder.swift).
        if _MutexWord.tryLock(_mutex) {
            // Relaxed, as lockContended leaves it: the holder may mark its word 2 (MutexWord.swift).
            if requeued { ilk_atomic_store_u32(_mutex, 2, ILK_ORDER_RELAXED) }
        } else {
            let probe = _Contention.begin()
            _reacquire(result, requeued: requeued)
            if probe != 0 { _Contention.end(probe, .conditionReacquire, self, hold: _mutex) }
        }
        #else
        _reacquire(result, requeued: requeued)
        #endif
        // Relaxed: read back only by this thread.
        ilk_atomic_store_u32(_owner, me, ILK_ORDER_RELAXED)
    }

    /// Step 5 of a wait: take the mutex back, the way that suits how the wait ended.
    @inline(__always)
    internal func _reacquire(_ result: _Futex.WaitResult, requeued: Bool) {
        if requeued {
            // Maybe requeued by a broadcast and woken by an unlock: keep the word at 2 so
            // that our unlock wakes the next requeued thread.
            _MutexWord.lockContended(_mutex, for: .condition)
        } else if result != .valueChanged && _AdaptiveSpin.loaded(at: ilk_clock_monotonic_ns()) {
            // Slept, and the cores are oversubscribed (AdaptiveSpin.swift): the signaller that
            // holds the mutex is likely not running, so one CAS, then park without spinning.
            if !_MutexWord.tryLock(_mutex) { _MutexWord._lockParking(_mutex, .condition) }
        } else {
            // Not woken through the mutex word: take it as any locker does (one CAS, then the
            // mutex's bounded spin, then parking), so that its unlock makes no system call.
            _MutexWord.lock(_mutex, for: .condition)
        }
    }

    @usableFromInline @inline(never)
    internal func _signalSlow() {
        // Seq_cst RMW: ordered after the `waiters` load (file comment, "sequence").
        _ = ilk_atomic_fetch_add_u64(_sequence, 1, ILK_ORDER_SEQ_CST)
        // Seq_cst: after the increment (file comment, "sleepers"); spinning waiters see the
        // increment and need no system call.
        if ilk_atomic_load_u32(_sleepers, ILK_ORDER_SEQ_CST) != 0 { _Futex.wakeOne(_futexWord, for: .condition) }
    }

    @usableFromInline @inline(never)
    internal func _broadcastSlow() {
        let mutex = _mutex
        // Seq_cst RMW: ordered after the `waiters` load (file comment, "sequence").
        let current = ilk_atomic_add_fetch_u64(_sequence, 1, ILK_ORDER_SEQ_CST)
        // Seq_cst: after the increment (file comment, "sleepers"). Nobody asleep: the
        // spinning waiters see the increment, and nobody needs moving onto the mutex.
        if ilk_atomic_load_u32(_sleepers, ILK_ORDER_SEQ_CST) == 0 { return }
        // Raise lastRequeued to `current` before the requeue can move anyone (file comment).
        let last = _lastRequeued
        // Relaxed: the first guess of the CAS loop, which re-reads the word itself.
        var seen = ilk_atomic_load_u64(last, ILK_ORDER_RELAXED)
        while seen < current {
            // Seq_cst: read after the wake-up by the requeued threads (file comment).
            let found = ilk_atomic_cas_value_u64(last, seen, current, ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED)
            if found == seen { break }
            seen = found
        }
        // Relaxed: compared with the caller's own id (file comment, "owner").
        let holding = ilk_atomic_load_u32(_owner, ILK_ORDER_RELAXED) == ilk_current_thread_id()
        let futexWord = _futexWord
        let expected = UInt32(truncatingIfNeeded: current)
        let moved: Int32?
        if holding {
            // We hold the mutex, so it is 1 or 2 and others only ever write 2 into it while
            // it is held: marking it 2 makes our unlock wake the first requeued thread.
            // Relaxed: no data is published by this mark; the unlock's release does that.
            _ = ilk_atomic_exchange_u32(mutex, 2, ILK_ORDER_RELAXED)
            moved = _Futex.requeue(futexWord, expected: expected, wake: 0, onto: mutex, for: .condition)
        } else {
            // Wake one, which takes the mutex with lockContended (marking it 2 after the
            // requeue), and move the rest.
            moved = _Futex.requeue(futexWord, expected: expected, wake: 1, onto: mutex, for: .condition)
        }
        if moved == nil {
            // The sequence moved under us (a concurrent signal): wake everyone instead.
            _Futex.wakeAll(futexWord, for: .condition)
        }
    }

    @usableFromInline @inline(never)
    internal func _trapNotHeld(_ operation: StaticString) -> Never {
        let locked = _MutexWord.isLocked(_mutex)
        _lockMisuse(
            "Condition", name: name,
            "\(operation) called by a thread that does not hold the lock ("
                + (locked ? "another thread holds it)" : "it is not locked)"))
    }
}
