// Waiting for a hand-off: the waiter side of the protocol by which ConditionLock hands its turn
// and Semaphore its unit to one chosen waiter, through a word in that waiter's own record.
//
// Record word: 0 waiting (the waiter may spin), 2 the waiter sleeps on the word (it announced
// it with a CAS 0 -> 2), 1 granted. The granter exchanges the word to 1 (release) and makes the
// futex wake only when the exchange returned 2, so a waiter caught while spinning costs the
// granter no system call. The waiter spins for the object's adaptive window (AdaptiveSpin.swift)
// when asked to, then announces its sleep and sleeps until it reads 1 (acquire) or its deadline
// passes. The announcement's CAS is relaxed on both sides: a failure means the word is 1
// already, which the acquire load that follows re-reads.

import CInterlock

/// The waiter side of a record-word hand-off (see the file comment).
@usableFromInline
internal enum _HandOff {
    /// Spins (when `spinning`), then sleeps, until `word` reads 1, learning the object's spin
    /// window from how long it took.
    /// - Returns: `true` when `deadline` passed first (the word may still be 0 or 2).
    @usableFromInline
    internal static func await(
        _ word: UnsafeMutablePointer<UInt32>, spinning: Bool, deadline: ContinuousClock.Instant?,
        spinWindow windowWord: UnsafeMutablePointer<UInt32>, for user: _FutexUser
    ) -> Bool {
        let window = _AdaptiveSpin.window(windowWord)
        let start = ilk_clock_monotonic_ns()
        // Acquire: pairs with the granter's release exchange to 1.
        if spinning,
            let elapsed = _AdaptiveSpin.spin(
                window: _AdaptiveSpin.window(window, before: deadline, at: start), start: start,
                while: {
                    ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE) != 1
                })
        {
            _AdaptiveSpin.learnFromSpin(windowWord, window: window, elapsed: elapsed)
            return false
        }
        // Announce the sleep, so that the granter makes the wake call. Relaxed on both sides:
        // a failure means the word is 1 already, re-read with acquire below.
        _ = ilk_atomic_cas_value_u32(word, 0, 2, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
        var timedOut = false
        // Acquire: pairs with the granter's release exchange to 1.
        while ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE) != 1 {
            if let deadline {
                if _Futex.wait(word, expected: 2, until: deadline, for: user) == .timedOut {
                    timedOut = true
                    break
                }
            } else {
                _ = _Futex.wait(word, expected: 2, for: user)
            }
        }
        _AdaptiveSpin.learnFromSleep(
            windowWord, window: window, waited: ilk_clock_monotonic_ns() &- start, woken: !timedOut)
        return timedOut
    }
}
