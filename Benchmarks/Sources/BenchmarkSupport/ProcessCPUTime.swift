// The process's CPU time, read around each measured sample so that every table can show the CPU
// time per operation beside the wall time: a win bought by spinning shows its price there.
//
// clock_gettime(CLOCK_PROCESS_CPUTIME_ID) rather than getrusage(RUSAGE_SELF): both sum user and
// system time over every thread of the process (helpers, Dispatch's and the Swift runtime's pools,
// liburcu's call_rcu worker), but getrusage reports microseconds and this clock nanoseconds, and a
// sample is often only tens of microseconds long. The reading is a system call (about 0.3 us here),
// made outside the wall-clock window: it adds that much CPU time, not wall time, to each sample.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The CPU time the whole process has used so far (every thread, user and system), in
/// nanoseconds.
public func processCPUNanoseconds() -> Int {
    var now = timespec()
    let status = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    precondition(status == 0, "BenchmarkSupport: clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed")
    return Int(now.tv_sec) * 1_000_000_000 + Int(now.tv_nsec)
}
