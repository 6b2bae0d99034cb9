// A cheap monotonic nanosecond clock for latency samples and progress: clock_gettime through
// the vDSO, about 20 ns, no allocation. Only differences between two readings mean anything.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on `CLOCK_MONOTONIC` since an arbitrary origin.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// The cost of one timed interval with this clock (two readings), in nanoseconds: the
/// smallest of many back-to-back measurements. Every latency sample includes it.
func measureTimerOverhead() -> UInt64 {
    var best = UInt64.max
    for _ in 0..<2_000 {
        let start = monotonicNanoseconds()
        best = min(best, monotonicNanoseconds() &- start)
    }
    return best
}

/// Sleeps the calling thread for `nanoseconds` (restarting after signals).
func sleepNanoseconds(_ nanoseconds: UInt64) {
    var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
