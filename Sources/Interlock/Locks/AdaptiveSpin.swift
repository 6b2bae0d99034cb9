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
//
// Under load: no spinning while the cores are oversubscribed. A spin pays only while the thread
// it waits for is running. When other work shares the cores, that thread is often runnable but
// not running, and the spinner burns the very core it needs; the window's rules above then make
// it worse (the wait that slept took long, so the window grows to the maximum). A sleeper, by
// contrast, is favoured by the scheduler when it is woken (it has used less than its share), so
// the kernel's peers, which always sleep, won there: beside a neighbour process whose six
// threads hand work around through Interlock, a 2-thread Condition ping-pong took 63 us per
// round trip against pthread's 20 us, at 47 us of CPU against 7.6, and a Semaphore hand-off 78
// us against sem_t's 13 (Benchmarks/README.md, "Under load").
//
// The evidence is the waiting thread's own run delay: the time it spent runnable but not running
// (Linux's /proc/thread-self/schedstat, `ilk_spin_run_delay_permille`). Measured per share of
// the wall time, in hand-off loops on this 2-vCPU machine: 0.4-0.7 % on a quiet machine, 4-10 %
// beside a busy loop per core at nice 19 (where spinning still wins 50-100 times over the
// peers, because the scheduler gives such loops about 1.5 % of a core), 26-30 % beside busy
// loops at the same priority, 37-40 % beside the neighbour process. Other signals were measured
// and rejected: involuntary context switches count the preemptions that a woken partner makes
// on its own waker (5-10 per ms in a quiet ping-pong, 24-44 under the neighbour), and gaps in a
// spinner's clock readings (descheduled mid-spin) occurred 2 times in 5 s under the neighbour
// (a spin is short next to a time slice), so they detected nothing.
//
// So a thread that slept (`learnFromSleep`) reads its run delay, at most every
// `sleepCheckInterval` (10 ms: an open, read and close of the file, about 5 us, so at most
// 0.05 % of a core per waiting thread, and only on paths that sleep anyway); a share above
// `loadedRunDelay` (15 %) records in a process-wide word (`ilk_spin_loaded_until`) that the
// cores count as oversubscribed for `loadMemory` (100 ms). Meanwhile: windows are cut to
// `loadedWindow` (0: one look, then sleep; 2 us measured worse, 18.2 against 13.5 us per
// Condition round trip under the neighbour), sleeps no longer grow windows, and a condition
// waiter that slept re-takes its mutex without the mutex's spin (Condition.swift, _leaveWait:
// its signaller, which holds the mutex, is likely not running; 15.1 against 16.0 us per round
// trip under the neighbour). The mutexes' own short spins stay (MutexWord.swift has the figure:
// they pay for short critical sections even then). Any sleeper that reads a high share again
// renews the record; once its time passes, the learned windows apply again. The word is
// process-wide because the load is the machine's, not an object's, and it is written only when
// a load is seen and the recorded time is more than an eighth of `loadMemory` old, so its line
// is read-mostly. Measured with it, under the neighbour: the Condition ping-pong 13.2 against
// NSCondition's 12.6 and pthread's 15.3 us per round trip, CPU 6.5 against 6.3 and 7.4; the
// Semaphore hand-off 11.7 against sem_t's 3.6-15.8 (bimodal) and Dispatch's 9.8 us; on a quiet
// machine unchanged (0.19 against 47 us). Where the file cannot be read (another system, a
// sandbox without /proc) nothing is ever recorded: the policy is the quiet machine's.

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
    /// The run delay, in thousandths of the time, above which the cores count as oversubscribed.
    @usableFromInline static var loadedRunDelay: Int32 { 150 }
    /// How long, in nanoseconds, a seen load makes the cores count as oversubscribed.
    @usableFromInline static var loadMemory: Int64 { 100_000_000 }
    /// The least time, in nanoseconds, between two checks of a sleeper's run delay.
    @usableFromInline static var sleepCheckInterval: Int64 { 10_000_000 }
    /// The longest window, in nanoseconds, while the cores count as oversubscribed: none.
    @usableFromInline static var loadedWindow: UInt32 { 0 }

    /// Whether the cores count as oversubscribed at `now` (an `ilk_clock_monotonic_ns()`
    /// reading): a sleeper saw a load less than `loadMemory` before.
    @inlinable @inline(__always)
    internal static func loaded(at now: Int64) -> Bool {
        // Relaxed: a heuristic (file comment); any value only changes how long a waiter spins.
        now < ilk_atomic_load_i64(ilk_spin_loaded_until(), ILK_ORDER_RELAXED)
    }

    /// A sleeper's look at the load at `now`: reads the thread's run delay (at most every
    /// `sleepCheckInterval`) and records a load above `loadedRunDelay`.
    /// - Returns: whether the cores count as oversubscribed now.
    @usableFromInline @discardableResult
    internal static func sampleLoad(at now: Int64) -> Bool {
        if ilk_spin_run_delay_permille(now, sleepCheckInterval) > loadedRunDelay {
            noteLoad(at: now)
            return true
        }
        return loaded(at: now)
    }

    /// Records that a sleeper found the cores oversubscribed at `now` (file comment).
    @usableFromInline
    internal static func noteLoad(at now: Int64) {
        let word = ilk_spin_loaded_until()
        let until = now &+ loadMemory
        // Relaxed (both): a heuristic (file comment). Skipped while the recorded time is recent,
        // so that the line stays read-mostly.
        if ilk_atomic_load_i64(word, ILK_ORDER_RELAXED) < until &- loadMemory / 8 {
            ilk_atomic_store_i64(word, until, ILK_ORDER_RELAXED)
        }
    }

    /// The current window of an object. Relaxed: a heuristic (file comment).
    @usableFromInline
    internal static func window(_ word: UnsafeMutablePointer<UInt32>) -> UInt32 {
        ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
    }

    /// Spins while `unchanged()` holds, for at most `window` nanoseconds after `start`
    /// (an `ilk_clock_monotonic_ns()` reading; `window(_:before:at:)` gives the window).
    /// - Returns: the nanoseconds since `start` when `unchanged()` stopped holding, or `nil`
    ///   when the window passed first.
    @usableFromInline
    internal static func spin(window: UInt32, start: Int64, while unchanged: () -> Bool) -> Int64? {
        let window = Int64(window)
        var backoff: UInt32 = 1
        let jitter = ilk_spin_jitter()
        while true {
            let pauses = backoff &+ (jitter & (backoff &- 1))
            for _ in 0..<pauses { ilk_spin_pause() }
            if backoff < maxBackoff { backoff &<<= 1 }
            let now = ilk_clock_monotonic_ns()
            if !unchanged() { return now &- start }
            if now &- start >= window { return nil }
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
    /// false when it timed out; first samples the machine's load (`sampleLoad(at:)`).
    @usableFromInline
    internal static func learnFromSleep(
        _ word: UnsafeMutablePointer<UInt32>, window: UInt32, waited: Int64, woken: Bool
    ) {
        let loaded = sampleLoad(at: ilk_clock_monotonic_ns())
        learnFromSleep(word, window: window, waited: waited, woken: woken, loaded: loaded)
    }

    /// The rules of `learnFromSleep(_:window:waited:woken:)`, given the load: while the cores
    /// count as oversubscribed, a sleep never grows the window (the wait was long because its
    /// partner was not running).
    @usableFromInline
    internal static func learnFromSleep(
        _ word: UnsafeMutablePointer<UInt32>, window: UInt32, waited: Int64, woken: Bool, loaded: Bool
    ) {
        if woken && waited <= Int64(maximumWindow) {
            if loaded { return }
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

    /// The window to spin for a wait that starts at `now`: `window`, cut to `loadedWindow`
    /// while the cores count as oversubscribed, and to the time left before `deadline` (a timed
    /// wait does not spin past its deadline).
    @usableFromInline
    internal static func window(_ window: UInt32, before deadline: ContinuousClock.Instant?, at now: Int64) -> UInt32 {
        let window = loaded(at: now) ? Swift.min(window, loadedWindow) : window
        guard let deadline else { return window }
        let left = _Futex._nanosecondsRoundedUp(ContinuousClock.now.duration(to: deadline))
        return UInt32(clamping: Swift.min(Int64(window), left))
    }
}
