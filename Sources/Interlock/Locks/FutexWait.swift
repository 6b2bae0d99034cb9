// Futex waits and wakes for the lock algorithms, with deadlines on ContinuousClock.
//
// What it is: the one place where a `ContinuousClock.Instant` becomes a futex timeout, so
// that every timed lock form (Lock, RecursiveLock, ReadWriteLock, Condition, ConditionLock)
// keeps the promise of its documentation: a timed call never reports a timeout before its deadline.
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
// Failures: the kernel answers a futex call with an error other than EAGAIN, ETIMEDOUT and
// EINTR only when it will keep answering so (EFAULT, EINVAL, ENOSYS, or EPERM from a seccomp
// filter): taking it for a wake-up, as this file once did, turned a parked thread into one
// spinning hot forever, and an ignored failed wake is a lost wake-up. Both trap, naming the
// primitive, the call and the errno. No primitive can degrade safely without futexes (only
// ReadWriteLock's membarrier has a fallback, in ReadWriteLock.swift), and a trap is what a
// user can diagnose.
//
// Memory ordering: none here. A futex wait or wake is not a synchronization edge (and
// ThreadSanitizer does not see one); every algorithm that sleeps re-reads its state word
// with an acquire operation after waking.

import CInterlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The primitive on whose behalf a futex call is made, named in the trap when the kernel
/// refuses the call. One byte, so that passing it costs an immediate on the slow paths.
@usableFromInline
internal enum _FutexUser: UInt8, Sendable {
    case lock, recursiveLock, readWriteLock, condition, conditionLock, semaphore, waitGroup
    case once, lazy, asyncLazy, synchronized, test, locked, readWriteLocked, boundedChannel

    @usableFromInline
    internal var typeName: String {
        switch self {
        case .lock: "Lock"
        case .recursiveLock: "RecursiveLock"
        case .readWriteLock: "ReadWriteLock"
        case .condition: "Condition"
        case .conditionLock: "ConditionLock"
        case .semaphore: "Semaphore"
        case .waitGroup: "WaitGroup"
        case .once: "Once"
        case .lazy: "Lazy"
        case .asyncLazy: "AsyncLazy"
        case .synchronized: "synchronized(_:_:)"
        case .test: "a test's futex word"
        case .locked: "Locked"
        case .readWriteLocked: "ReadWriteLocked"
        case .boundedChannel: "BoundedChannel"
        }
    }
}

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

    /// Sleeps while `*word == expected`, with no deadline. Traps, naming `user`, when the
    /// kernel refuses the wait (file comment, "Failures").
    @usableFromInline
    internal static func wait(
        _ word: UnsafeMutablePointer<UInt32>, expected: UInt32, for user: _FutexUser
    ) -> WaitResult {
        _inject(.futexWait)
        // SAFETY: `word` is a live, 4-byte-aligned UInt32 owned by a lock object that the
        // caller keeps alive for the call.
        return _result(ilk_futex_wait(word, expected, -1), user)
    }

    /// Sleeps while `*word == expected`, until `deadline` at the latest.
    ///
    /// Returns `.timedOut` only once `ContinuousClock.now >= deadline`; a deadline already
    /// passed returns `.timedOut` at once without a system call.
    @usableFromInline
    internal static func wait(
        _ word: UnsafeMutablePointer<UInt32>, expected: UInt32,
        until deadline: ContinuousClock.Instant, for user: _FutexUser
    ) -> WaitResult {
        _inject(.futexWait)
        while true {
            guard let bootDeadline = _bootTimeNanoseconds(of: deadline) else { return .timedOut }
            let r = ilk_futex_wait_until(word, expected, bootDeadline)
            if r != Int32(ILK_FUTEX_TIMED_OUT) { return _result(r, user) }
            // The futex deadline has passed on CLOCK_BOOTTIME; report it only when the
            // caller's clock agrees, otherwise wait for the rest.
            if ContinuousClock.now >= deadline { return .timedOut }
        }
    }

    /// Wakes up to `count` waiters of `word`; traps, naming `user`, when the kernel refuses.
    /// - Returns: how many were woken (0 when the fallback cannot tell).
    @usableFromInline @discardableResult
    internal static func wake(_ word: UnsafeMutablePointer<UInt32>, count: Int32, for user: _FutexUser) -> Int32 {
        _inject(.futexWake)
        let woken = ilk_futex_wake(word, count)
        if _slowPath(woken < 0) { _failure("wake", -woken, user) }
        return woken
    }

    /// Wakes one waiter of `word`. - Returns: how many were woken (0 or 1).
    @usableFromInline @discardableResult
    internal static func wakeOne(_ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser) -> Int32 {
        wake(word, count: 1, for: user)
    }

    /// Wakes every waiter of `word`. - Returns: how many were woken.
    @usableFromInline @discardableResult
    internal static func wakeAll(_ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser) -> Int32 {
        wake(word, count: Int32.max, for: user)
    }

    /// FUTEX_CMP_REQUEUE (ilk_futex.h): wakes up to `wake` waiters of `word` and moves the
    /// others onto `target`, if `*word == expected`.
    /// - Returns: how many were woken or moved, or `nil` when `*word` had changed. Traps,
    ///   naming `user`, on any other failure.
    @usableFromInline
    internal static func requeue(
        _ word: UnsafeMutablePointer<UInt32>, expected: UInt32, wake: Int32,
        onto target: UnsafeMutablePointer<UInt32>, for user: _FutexUser
    ) -> Int32? {
        _inject(.futexWake)
        let r = ilk_futex_requeue(word, expected, wake, target, Int32.max)
        if r >= 0 { return r }
        if r == -EAGAIN { return nil }
        _failure("requeue", -r, user)
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
    internal static func _result(_ r: Int32, _ user: _FutexUser) -> WaitResult {
        switch r {
        case Int32(ILK_FUTEX_WOKEN): return .woken
        case Int32(ILK_FUTEX_VALUE_CHANGED): return .valueChanged
        case Int32(ILK_FUTEX_TIMED_OUT): return .timedOut
        default: _failure("wait", -r, user)
        }
    }

    /// The trap for a futex call the kernel refused (file comment, "Failures").
    @usableFromInline @inline(never)
    internal static func _failure(_ call: StaticString, _ code: Int32, _ user: _FutexUser) -> Never {
        let reason = strerror(code).map { String(cString: $0) } ?? "unknown error"
        fatalError(
            "\(user.typeName): futex \(call) failed with errno \(code) (\(reason)); the kernel or a "
                + "seccomp filter refuses futex(2), so no thread can sleep or be woken safely")
    }
}
