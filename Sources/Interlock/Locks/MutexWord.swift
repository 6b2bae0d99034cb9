// _MutexWord: the futex mutex algorithm over one 32-bit word, shared by Lock, RecursiveLock,
// Condition and ConditionLock.
//
// Algorithm: Ulrich Drepper, "Futexes Are Tricky" (2011), mutex 3 — a three-state word, so
// that the uncontended lock is one compare-and-swap and the uncontended unlock one atomic
// decrement with no system call — plus bounded spinning with exponential backoff before
// parking, as glibc's PTHREAD_MUTEX_ADAPTIVE_NP does since 2.35.
//
// State word:
//
//   value  name        meaning
//   -----  ----------  ------------------------------------------------------------------
//     0    unlocked    nobody holds the mutex
//     1    locked      held; no thread is parked in the kernel on the word
//     2    contended   held, and threads MAY be parked on the word: unlock must wake one
//
// Transitions:
//   lock, fast path   CAS 0 -> 1 (acquire)
//   lock, spinning    pause 1, 2, 4, ... rounds (plus a jitter below the round count) between
//                     relaxed reads of the word, within a budget of `_spinBudget` pauses;
//                     when it reads 0, CAS 0 -> 1 (acquire)
//   lock, parking     exchange(2) (acquire); while that returned non-zero, futex-wait on 2
//                     and exchange(2) again. A thread that parked owns the mutex as 2:
//                     it cannot know whether others still sleep, so it keeps the "maybe".
//   lockContended     the parking loop alone: for a thread requeued from a condition onto
//                     this word, which must leave it at 2 so the wake chain is not broken
//   unlock            decrement (release): 1 -> 0 is done; 2 -> 1 is followed by a store of 0
//                     (release) and a futex-wake of one thread; 0 -> 0xFFFFFFFF is a misuse,
//                     undone (see _unlockSlow) before the caller traps. The decrement is a
//                     `lock sub` branching on its flags on x86-64 Linux (ilk_mutex.h: 0.3 ns
//                     cheaper than the exchange with 0 and a compare of its result).
//
// Invariants:
//   - Whenever a thread is parked on the word (or about to park: between its exchange(2)
//     and its futex wait), the word is 2 or the thread's futex wait will fail with
//     EAGAIN. Parking threads write 2 themselves, and only an unlock writes 0, and it then
//     wakes one; so no wake-up is lost. (Between an unlock's 2 -> 1 and its store of 0 the
//     word reads 1 with nobody holding the mutex: a thread arriving then takes it for held,
//     spins, or writes 2 and parks; the store of 0 makes its futex wait fail or the wake
//     that follows the store reaches a parked thread, which writes 2 again.)
//   - A woken thread always re-takes the word with exchange(2), so if others are still
//     parked the word stays 2 and the next unlock wakes the next one (no lost wake-up; one
//     wake per unlock, no thundering herd).
//   - The holder may store 2 at any time (it only says "maybe waiters"): its unlock then takes
//     the slow path and makes one wake call that may find nobody. Contention profiling does so
//     after a recorded wait, to see the release that ends the hold (ContentionRecorder.swift).
//   - A spinner may take the word 0 -> 1 ahead of a woken thread; the woken thread's
//     exchange(2) then finds 1, re-marks the word 2 and parks again, so the spinner's
//     unlock wakes it. Barging trades strict fairness for throughput, as glibc's does.
//
// Memory ordering:
//   - Every operation that takes the mutex (the CASes and exchanges that find 0) is an
//     acquire; the unlock's decrement is a release. They pair: the critical section of one
//     holder happens-before that of the next. An exchange(2) that finds 1 or 2 takes
//     nothing, and acquire on it is merely harmless. After a 2 -> 1 decrement the store of 0
//     is a release too: the next holder reads 0 from that store, not from the decrement.
//   - Spinning loads are relaxed: they only decide when to attempt the acquiring CAS,
//     which re-reads the word atomically.
//   - No fences: ThreadSanitizer sees the happens-before edges on the word itself.
//
// Spinning: a waiter looks at the word after 1, 2, 4, 8, ... pause rounds (each doubled round
// count plus a jitter below it, from the cycle counter, so that two waiters drift apart), and
// parks once the next wait would exceed `_spinBudget` = 150 pauses in all (a few microseconds,
// about 6 looks). Polling the word on every pause, as this lock did before, keeps stealing the
// cache line from the holder, who must take it back for its unlock and its next lock; backing
// off lets the holder run several critical sections in a row. The same policy is glibc's
// adaptive mutex's since 2.35. Deciding figure: a 2-thread shared counter went from 19.7 to 7.8
// ns per increment (budgets of 50-200 pauses within 10 % of each other, 400 and more worse);
// Benchmarks/README.md, "Design measurements", has the table.
//
// Under load the spin stays: while the cores count as oversubscribed (AdaptiveSpin.swift), a
// condition or semaphore waiter no longer spins, but this bounded spin still pays, because the
// critical sections a mutex guards are short and their holders mostly run. Measured, with 4
// threads on the 2 cores (which the detector counts as oversubscribed): skipping it made a
// shared counter 35-41 ns per increment instead of 14.2-14.6 (pthread's adaptive mutex: 27-29).
// Only a condition's re-acquisition after a sleep skips it (Condition.swift, _leaveWait).

import CInterlock
import Synchronization

/// The futex mutex algorithm (Drepper's mutex 3 with bounded spinning) over a word at a
/// stable address. The caller owns the word and names itself in its traps.
@usableFromInline
internal enum _MutexWord {
    /// Nobody holds the mutex.
    @usableFromInline static var unlocked: UInt32 { 0 }
    /// Held, with nobody parked.
    @usableFromInline static var locked: UInt32 { 1 }
    /// Held, and threads may be parked: unlock must wake one.
    @usableFromInline static var contended: UInt32 { 2 }

    /// Takes the mutex if it is free. One CAS.
    /// - Returns: `true` when the caller now holds it.
    @inlinable @inline(__always)
    internal static func tryLock(_ word: UnsafeMutablePointer<UInt32>) -> Bool {
        // Acquire on success: pairs with the release decrement (or store of 0) of the previous unlock.
        // Relaxed on failure: nothing is taken, nothing is read under the lock. A builtin, not
        // the shim's CAS: it stays inline in protocol witnesses (WordAtomics.swift).
        _Word32.atomic(word).pointee.compareExchange(
            expected: 0, desired: 1, successOrdering: .acquiring, failureOrdering: .relaxed
        ).exchanged
    }

    /// Blocks until the caller holds the mutex. Fast path one CAS inline.
    @inlinable @inline(__always)
    internal static func lock(_ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser) {
        if _slowPath(!tryLock(word)) { _lockSlow(word, user) }
    }

    /// Takes the mutex before `deadline` or returns `false`; never `false` before it.
    /// A deadline already passed makes this a `tryLock`.
    @inlinable @inline(__always)
    internal static func lock(
        _ word: UnsafeMutablePointer<UInt32>, before deadline: ContinuousClock.Instant, for user: _FutexUser
    ) -> Bool {
        if _fastPath(tryLock(word)) { return true }
        return _lockSlow(word, before: deadline, user)
    }

    /// Acquires leaving the word in the contended state (2), for a thread that was parked
    /// elsewhere (requeued from a condition variable onto this word) and must assume others
    /// are parked here too.
    @inlinable
    internal static func lockContended(_ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser) {
        _lockParking(word, user)
    }

    /// Releases the mutex; wakes one parked thread when the word said there may be one.
    /// - Returns: `false` when the mutex was not locked (the caller traps, naming itself).
    @inlinable @inline(__always)
    internal static func unlock(_ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser) -> Bool {
        // Release (both forms): pairs with the acquiring CAS/exchange of the next holder.
        // The assembly form unless ThreadSanitizer's runtime is linked in (ilk_mutex.h: one C
        // function, so one call where a protocol witness keeps it out of line).
        let outcome = ilk_mutex_release(word)
        if _fastPath(outcome == ILK_MUTEX_RELEASED) { return true }
        return _unlockSlow(word, outcome, user)
    }

    /// Whether the mutex is held by anyone, as a relaxed snapshot (for diagnostics).
    @inlinable @inline(__always)
    internal static func isLocked(_ word: UnsafeMutablePointer<UInt32>) -> Bool {
        // Relaxed: a snapshot that orders nothing, used only to choose a trap message.
        ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) != 0
    }

    // MARK: - Slow paths (out of line)

    /// The unlock's decrement found 2 (sleepers maybe) or 0 (not locked).
    @usableFromInline @inline(never)
    internal static func _unlockSlow(
        _ word: UnsafeMutablePointer<UInt32>, _ outcome: UInt32, _ user: _FutexUser
    ) -> Bool {
        if outcome == ILK_MUTEX_NOT_LOCKED {
            _undoUnlockOfUnlocked(word, user)
            return false
        }
        #if INTERLOCK_CONTENTION
        // A hold that began after a recorded wait ends here (ContentionRecorder.swift); a
        // warning about it is printed once the word is free.
        let warning = _slowPath(_Contention.tracksHolds) ? _Contention.released(word) : nil
        #endif
        // The word went 2 -> 1 and nobody can take it from 1 (the CAS wants 0): free it.
        _inject(.mutexUnlockStore)
        // Release: the next holder's acquire reads 0 from this store (the file comment).
        ilk_atomic_store_u32(word, 0, ILK_ORDER_RELEASE)
        // Someone may be parked; wake exactly one (no thundering herd).
        _Futex.wakeOne(word, for: user)
        #if INTERLOCK_CONTENTION
        if let warning { _Contention.warn(warning) }
        #endif
        return true
    }

    /// Puts back 0 after a decrement that found the mutex unlocked (0 -> 0xFFFFFFFF), before
    /// the caller traps: the word is never left corrupt. A thread that met 0xFFFFFFFF took the
    /// mutex for held; if one wrote 2 to park, the undo releases as a contended unlock does.
    @usableFromInline @inline(never)
    internal static func _undoUnlockOfUnlocked(_ word: UnsafeMutablePointer<UInt32>, _ user: _FutexUser) {
        // Release on success, as an unlock's; relaxed on failure: nothing read depends on it.
        if ilk_atomic_cas_value_u32(word, UInt32.max, 0, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED) != UInt32.max {
            // Release: as the contended unlock's store of 0.
            ilk_atomic_store_u32(word, 0, ILK_ORDER_RELEASE)
            _Futex.wakeOne(word, for: user)
        }
    }

    @usableFromInline @inline(never)
    internal static func _lockSlow(_ word: UnsafeMutablePointer<UInt32>, _ user: _FutexUser) {
        if _spin(word) { return }
        _lockParking(word, user)
    }

    @usableFromInline @inline(never)
    internal static func _lockSlow(
        _ word: UnsafeMutablePointer<UInt32>, before deadline: ContinuousClock.Instant, _ user: _FutexUser
    ) -> Bool {
        // A deadline already passed is a try, and the try has failed.
        if ContinuousClock.now >= deadline { return false }
        if _spin(word) { return true }
        // Acquire: pairs with the unlock's release when this finds 0 (see _lockParking).
        while ilk_atomic_exchange_u32(word, 2, ILK_ORDER_ACQUIRE) != 0 {
            if _Futex.wait(word, expected: 2, until: deadline, for: user) == .timedOut {
                // The word stays 2 ("maybe waiters"): at worst the holder makes one wake
                // call for nobody. No wake-up was consumed: a woken wait returns .woken.
                return false
            }
        }
        return true
    }

    /// Parks until the exchange(2) finds the mutex free; the caller then holds it as 2.
    @usableFromInline @inline(never)
    internal static func _lockParking(_ word: UnsafeMutablePointer<UInt32>, _ user: _FutexUser) {
        // Acquire: when the exchange finds 0 the caller takes the mutex; pairs with the
        // release decrement or store of the unlock that wrote 0.
        while ilk_atomic_exchange_u32(word, 2, ILK_ORDER_ACQUIRE) != 0 {
            _ = _Futex.wait(word, expected: 2, for: user)
        }
    }

    /// Bounded spinning with exponential backoff: returns `true` holding the mutex, `false`
    /// when the budget is spent and it is time to park (the file comment has the policy).
    @usableFromInline
    internal static func _spin(_ word: UnsafeMutablePointer<UInt32>) -> Bool {
        // The same budget whatever the load: the file comment ("Under load the spin stays").
        var budget = _spinBudget
        var backoff: UInt32 = 1
        let jitter = ilk_spin_jitter()
        while true {
            // backoff plus a jitter in 0..<backoff, so that two waiters drift apart.
            let pauses = backoff &+ (jitter & (backoff &- 1))
            if pauses >= budget { return false }
            budget &-= pauses
            for _ in 0..<pauses { ilk_spin_pause() }
            backoff &<<= 1  // the budget ends the spin long before this could overflow
            // Relaxed: only decides when to try the acquiring CAS below.
            if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) == 0
                // Acquire on success: pairs with the unlock's release.
                && ilk_atomic_cas_value_u32(word, 0, 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == 0
            {
                return true
            }
        }
    }
}

/// `ilk_spin_pause` rounds a waiter may spend before parking; the file comment gives the
/// measurement behind the value.
@usableFromInline
internal let _spinBudget: UInt32 = 150
