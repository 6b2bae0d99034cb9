// `--inject SEED`: the stress harness's side of fault injection (Sources/Interlock/Injection).
// In a harness built with `-DINTERLOCK_FAULT_INJECTION` (make stress-inject), every injection
// point of Interlock's slow paths calls `Injector.visit`, which makes the thread yield (1 visit
// in 8) or sleep 1-64 us (1 in 16), or go on. Each thread draws from its own generator, seeded
// from SEED and the order in which threads first reach a point, so a thread's n-th decision is
// a function of the seed; the interleaving still depends on the scheduler, so a failure found
// with a seed is likely, not certain, to recur with it.

import Interlock

#if canImport(Glibc)
import Glibc
#endif

#if INTERLOCK_FAULT_INJECTION
/// Whether this harness was built with fault injection.
let injectionAvailable = true
#else
/// Whether this harness was built with fault injection.
let injectionAvailable = false
#endif

/// `--inject`'s seed when injection is on in this process (set by main before any workload);
/// child processes of a workload get the seed plus their ordinal (WorkloadContext.spawnChild).
nonisolated(unsafe) var injectionSeed: UInt64?

#if INTERLOCK_FAULT_INJECTION
/// Installs and counts the injection decisions (see the file comment).
enum Injector {
    /// Visits per point (index = point number), and delays made.
    static let visits = (0..<_FaultInjection.pointNames.count).map { _ in AtomicInt(0) }
    static let yields = AtomicInt(0)
    static let sleeps = AtomicInt(0)
    private static let ordinals = AtomicUInt64(0)
    // Set once in install(seed:), before any worker starts.
    nonisolated(unsafe) private static var seed: UInt64 = 0
    nonisolated(unsafe) private static var key = pthread_key_t()

    /// Installs the handler. Call once, before any workload starts.
    static func install(seed: UInt64) {
        self.seed = seed
        pthread_key_create(&key) { free($0) }
        _FaultInjection.install { point in Injector.visit(point) }
    }

    private static func visit(_ point: UInt32) {
        // Relaxed: counters for the report only.
        visits[Int(point)].add(1, ordering: .relaxed)
        var state: UnsafeMutablePointer<UInt64>
        if let existing = pthread_getspecific(key) {
            state = existing.assumingMemoryBound(to: UInt64.self)
        } else {
            state = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
            // Relaxed: only distinct values are needed.
            let ordinal = ordinals.add(1, ordering: .relaxed)
            state.pointee = seed ^ (ordinal &* 0x9E37_79B9_7F4A_7C15)
            pthread_setspecific(key, state)
        }
        // splitmix64
        state.pointee &+= 0x9E37_79B9_7F4A_7C15
        var z = state.pointee
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        switch z & 15 {
        case 0, 1:
            yields.add(1, ordering: .relaxed)
            sched_yield()
        case 2:
            sleeps.add(1, ordering: .relaxed)
            var pause = timespec(tv_sec: 0, tv_nsec: Int((z >> 8) & 63 + 1) * 1_000)
            nanosleep(&pause, nil)
        default:
            break
        }
    }

    /// One line per point reached, for the end of the run.
    static var summary: String {
        var lines = ["injection: \(yields.load(ordering: .relaxed)) yields, \(sleeps.load(ordering: .relaxed)) sleeps"]
        for (index, name) in _FaultInjection.pointNames.enumerated().dropFirst() {
            lines.append("  \(name): \(visits[index].load(ordering: .relaxed)) visits")
        }
        return lines.joined(separator: "\n")
    }
}
#endif
