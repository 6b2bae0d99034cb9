// Waiting for another thread's progress in a test without sleeping: poll a condition and
// give the processor away between polls, so that on a machine with fewer cores than busy
// threads the thread being waited for gets to run.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Returns once `condition()` is true, yielding the processor between polls.
func spinUntil(_ condition: () -> Bool) {
    while !condition() { sched_yield() }
}
