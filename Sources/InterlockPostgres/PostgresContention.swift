// The waits in the server as contention profiling records them (Interlock's
// ContentionRecorder.swift): a lock or permit that was not free at the first try and was taken
// after waiting. With the package trait ContentionProfiling; without it both calls are empty
// and vanish.
#if INTERLOCK_CONTENTION
@_spi(ContentionProfiling) import Interlock
#endif

enum _PGContention {
    /// The start of a wait (0: not recorded; always 0 without the trait).
    @inline(__always)
    static func begin() -> Int64 {
        #if INTERLOCK_CONTENTION
        return _ContentionProbe.begin()
        #else
        return 0
        #endif
    }

    /// The end of a wait that took the lock (or, `semaphore`, a permit) named `name`.
    @inline(__always)
    static func end(_ probe: Int64, _ session: AnyObject, name: String, semaphore: Bool) {
        #if INTERLOCK_CONTENTION
        _ContentionProbe.endPostgres(probe, session, name: name, semaphore: semaphore)
        #endif
    }
}
