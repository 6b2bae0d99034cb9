// Futex waits and wakes for the lock algorithms, with deadlines on ContinuousClock.
//
// What it is: the one place where a `ContinuousClock.Instant` becomes a futex timeout, so
// that every timed lock form (Lock, RecursiveLock, ReadWriteLock, Condition, ConditionLock)
// keeps the promise of API.md: a timed call never reports a timeout before its deadline.
//
// How: the shim's `ilk_futex_wait_until` sleeps until an absolute CLOCK_BOOTTIME deadline,
// never returning ILK_FUTEX_TIMED_OUT early on that clock. A `ContinuousClock.Instant` is
// opaque, so it is converted as `ilk_clock_boottime_ns() + (deadline - ContinuousClock.now)`,
// with the duration rounded UP to whole nanoseconds and the boot-time clock read AFTER
// `ContinuousClock.now`, so the futex deadline is never earlier than the Instant. Swift's
// ContinuousClock is CLOCK_BOOTTIME on Linux already, but nothing here depends on it: before
// reporting a timeout the caller's deadline is re-checked on ContinuousClock itself, and the
// wait resumes if it has not passed.
//
// Memory ordering: none here. A futex wait or wake is not a synchronization edge (and
// ThreadSanitizer does not see one); every algorithm that sleeps re-reads its state word
// with an acquire operation after waking.

import CInterlock

/// Futex wait and wake on a 32-bit word, for the lock algorithms of this module.
@usableFromInline
internal enum _Futex {
    /// Why a wait returned. Every caller re-checks its own condition after any of them.
    @usableFromInline
    internal enum WaitResult: Equatable, Sendable {
        /// Woken by a wake, a signal, or spuriously.
        case woken
        /// The word did not hold the expected value when the wait began.
        case valueChanged
        /// The deadline has passed on `ContinuousClock` (never reported earlier).
        case timedOut
    }

    /// Sleeps while `*word == expected`, with no deadline.
    @usableFromInline
    internal static func wait(_ word: UnsafeMutablePointer<UInt32>, expected: UInt32) -> WaitResult {
        // SAFETY: `word` is a live, 4-byte-aligned UInt32 owned by a lock object that the
        // caller keeps alive for the call.
        _result(ilk_futex_wait(word, expected, -1))
    }

    /// Sleeps while `*word == expected`, until `deadline` at the latest.
    ///
    /// Returns `.timedOut` only once `ContinuousClock.now >= deadline`; a deadline already
    /// passed returns `.timedOut` at once without a system call.
    @usableFromInline
    internal static func wait(
        _ word: UnsafeMutablePointer<UInt32>, expected: UInt32,
        until deadline: ContinuousClock.Instant
    ) -> WaitResult {
        while true {
            guard let bootDeadline = _bootTimeNanoseconds(of: deadline) else { return .timedOut }
            let r = ilk_futex_wait_until(word, expected, bootDeadline)
            if r != Int32(ILK_FUTEX_TIMED_OUT) { return _result(r) }
            // The futex deadline has passed on CLOCK_BOOTTIME; report it only when the
            // caller's clock agrees, otherwise wait for the rest.
            if ContinuousClock.now >= deadline { return .timedOut }
        }
    }

    /// Wakes up to `count` waiters of `word`.
    /// - Returns: how many were woken (0 when the fallback cannot tell).
    @usableFromInline @discardableResult
    internal static func wake(_ word: UnsafeMutablePointer<UInt32>, count: Int32) -> Int32 {
        ilk_futex_wake(word, count)
    }

    /// Wakes one waiter of `word`. - Returns: how many were woken (0 or 1).
    @usableFromInline @discardableResult
    internal static func wakeOne(_ word: UnsafeMutablePointer<UInt32>) -> Int32 {
        ilk_futex_wake(word, 1)
    }

    /// Wakes every waiter of `word`. - Returns: how many were woken.
    @usableFromInline @discardableResult
    internal static func wakeAll(_ word: UnsafeMutablePointer<UInt32>) -> Int32 {
        ilk_futex_wake(word, Int32.max)
    }

    /// `deadline` as an absolute CLOCK_BOOTTIME time in nanoseconds, never earlier than the
    /// Instant; `nil` when the deadline has already passed.
    @usableFromInline
    internal static func _bootTimeNanoseconds(of deadline: ContinuousClock.Instant) -> Int64? {
        let now = ContinuousClock.now
        if now >= deadline { return nil }
        let left = _nanosecondsRoundedUp(now.duration(to: deadline))
        // Read after `now`: the boot-time base is not earlier than the instant `left` counts from.
        let (sum, overflow) = ilk_clock_boottime_ns().addingReportingOverflow(left)
        return overflow ? Int64.max : sum
    }

    /// A positive duration in whole nanoseconds, rounded up, saturating at `Int64.max`.
    @usableFromInline
    internal static func _nanosecondsRoundedUp(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return Int64.max }
        let perNanosecond: Int64 = 1_000_000_000
        let fraction = (attoseconds + perNanosecond - 1) / perNanosecond
        let (total, overflow2) = whole.addingReportingOverflow(fraction)
        return overflow2 ? Int64.max : total
    }

    @inline(__always)
    internal static func _result(_ r: Int32) -> WaitResult {
        switch r {
        case Int32(ILK_FUTEX_VALUE_CHANGED): return .valueChanged
        case Int32(ILK_FUTEX_TIMED_OUT): return .timedOut
        default: return .woken
        }
    }
}
