// The distributed locks' waits as contention profiling records them (ContentionRecorder.swift):
// a `lock(before:)` whose first attempt failed and that then took the lock, keyed by the
// lock's name (a path, or a PostgreSQL lock's name), so that every object of one lock in this
// process is one site. InterlockPostgres records through the SPI below. Builds with the
// package trait ContentionProfiling only.
#if INTERLOCK_CONTENTION
extension DistributedLock {
    /// The identity a site keys on when the path names it (unused: keyed by name).
    internal var _contentionKey: UnsafeRawPointer { UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) }
}

/// Contention profiling for InterlockPostgres's waits in the server (not for use elsewhere).
@_spi(ContentionProfiling)
public enum _ContentionProbe {
    /// The start of a wait: 0 when nothing is to be recorded.
    public static func begin() -> Int64 { _Contention.begin() }

    /// Records a `PostgresLock` (or, `semaphore`, a `PostgresSemaphore`) wait that ended with
    /// the lock or permit taken; `name` is the lock's name.
    public static func endPostgres(_ probe: Int64, _ object: AnyObject, name: String, semaphore: Bool) {
        guard probe != 0 else { return }
        _Contention.end(
            probe, semaphore ? .postgresSemaphore : .postgresLock,
            address: UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()), label: name)
    }
}
#endif
