// AdaptiveSpin: how long a thread that waits for a condition (Condition, ConditionLock) spins
// before it sleeps in the kernel, learned per object from how long its recent waits took.
//
// Why spin at all: waking a sleeping thread costs the waker a system call and the sleeper a
// trip through the scheduler, and on an idle core (deep C-state, or a virtual CPU the host has
// descheduled) tens of microseconds; on a 2-vCPU virtual machine, a condition ping-pong paid
// 20-40 us per hand-off that way (pthread's condvar and NSCondition, which never spin, still
// do). A waiter that is still spinning when it is signalled costs neither side a system call.
//
// Why adapt: a fixed budget is wrong in both directions. Too short, and two threads that hand
// work back and forth fall into a regime where each wake-up takes longer than the budget, so
// the partner has stopped spinning too, and every hand-off sleeps (measured: a 4 us budget
// flipped between 0.2 us and 15 us per round trip from run to run). Too long, and waits that
// are long anyway burn a core for nothing. So each object keeps a spin window, in nanoseconds:
//
//   event                                   window becomes
//   --------------------------------------  --------------------------------------------------
//   wait satisfied while spinning, after t  moves 1/8 of the way toward max(minimum, 2 t):
//                                           stays above what recent hand-offs needed
//   slept, woken after t in all, t <= max   max(window, t + t/4), at most `maximumWindow`:
//                                           the next wait spins long enough to catch it
//   slept and woken after t > max, or       window / 2, at least `minimumWindow`: long waits
//   timed out                               stop paying for spinning
//
// The window is read and written with relaxed atomics: it is a heuristic shared by the waiters
// of one object, and any value in [minimum, maximum] is safe (it decides only how long to
// spin, never whether a wake-up is seen). A spin checks the clock once per look at the word
// (a vDSO call, ~20 ns) and backs off exponentially between looks, up to `maxBackoff` pauses,
// so that a change is noticed within about a microsecond.
//
// Cost bound: at most `maximumWindow` (50 us) of CPU per wait, and never past a timed wait's
// deadline (`window(_:before:)`); callers also skip spinning
// when more threads wait than a hand-over needs (see Condition.swift and ConditionLock.swift),
// since spinners would take the cores that the thread they wait for needs.

import CInterlock

/// The adaptive spin-then-sleep policy of condition waits (see the file comment).
@usableFromInline
internal enum _AdaptiveSpin {
    /// The shortest window, in nanoseconds.
    @usableFromInline static var minimumWindow: UInt32 { 1_000 }
    /// The longest window, in nanoseconds: also the longest wait worth catching by spinning.
    @usableFromInline static var maximumWindow: UInt32 { 50_000 }
    /// A new object's window, in nanoseconds.
    @usableFromInline static var initialWindow: UInt32 { 4_000 }
    /// The longest pause between two looks at the word, in `ilk_spin_pause` rounds.
    @usableFromInline static var maxBackoff: UInt32 { 32 }

    /// The current window of an object. Relaxed: a heuristic (file comment).
    @usableFromInline
    internal static func window(_ word: UnsafeMutablePointer<UInt32>) -> UInt32 {
        ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
    }

    /// Spins while `unchanged()` holds, for at most `window` nanoseconds after `start`
    /// (an `ilk_clock_monotonic_ns()` reading).
    /// - Returns: the nanoseconds since `start` when `unchanged()` stopped holding, or `nil`
    ///   when the window passed first.
    @usableFromInline
    internal static func spin(window: UInt32, start: Int64, while unchanged: () -> Bool) -> Int64? {
        var backoff: UInt32 = 1
        let jitter = ilk_spin_jitter()
        while true {
            let pauses = backoff &+ (jitter & (backoff &- 1))
            for _ in 0..<pauses { ilk_spin_pause() }
            if backoff < maxBackoff { backoff &<<= 1 }
            let elapsed = ilk_clock_monotonic_ns() &- start
            if !unchanged() { return elapsed }
            if elapsed >= Int64(window) { return nil }
        }
    }

    /// Learns from a wait that a spin satisfied after `elapsed` nanoseconds.
    @usableFromInline
    internal static func learnFromSpin(_ word: UnsafeMutablePointer<UInt32>, window: UInt32, elapsed: Int64) {
        let target = Int64(Swift.max(minimumWindow, UInt32(clamping: elapsed &* 2)))
        let current = Int64(window)
        let next = current - (current - target) / 8
        _store(word, next, replacing: window)
    }

    /// Learns from a wait that slept: `waited` nanoseconds in all (spin included), `woken`
    /// false when it timed out.
    @usableFromInline
    internal static func learnFromSleep(
        _ word: UnsafeMutablePointer<UInt32>, window: UInt32, waited: Int64, woken: Bool
    ) {
        if woken && waited <= Int64(maximumWindow) {
            _store(word, Swift.max(Int64(window), waited + waited / 4), replacing: window)
        } else {
            _store(word, Int64(window / 2), replacing: window)
        }
    }

    /// Stores `value`, clamped to the bounds, unless it equals `current` (the word shares a
    /// cache line with the object's hot words: a store that changes nothing still takes it).
    @inline(__always)
    internal static func _store(_ word: UnsafeMutablePointer<UInt32>, _ value: Int64, replacing current: UInt32) {
        let clamped = UInt32(Swift.min(Int64(maximumWindow), Swift.max(Int64(minimumWindow), value)))
        if clamped == current { return }
        // Relaxed: a heuristic (file comment).
        ilk_atomic_store_u32(word, clamped, ILK_ORDER_RELAXED)
    }

    /// `window`, shortened to the time left before `deadline` (a timed wait does not spin
    /// past its deadline).
    @usableFromInline
    internal static func window(_ window: UInt32, before deadline: ContinuousClock.Instant?) -> UInt32 {
        guard let deadline else { return window }
        let left = _Futex._nanosecondsRoundedUp(ContinuousClock.now.duration(to: deadline))
        return UInt32(clamping: Swift.min(Int64(window), left))
    }
}
