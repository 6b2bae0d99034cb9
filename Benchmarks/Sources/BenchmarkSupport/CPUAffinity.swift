// CPUAffinity: the calling thread's set of allowed CPUs, to pin the two probing threads of
// `ThreadTeam.probeRoundTrip()` on different CPUs for the probe and restore them afterwards.
//
// Why: the scheduler does not migrate a cache-hot thread to balance load, so two spinning
// threads that share a vCPU can stay together; a probe between them then measures a context
// switch, not the interconnect, and the gate waits in vain (observed: whole benchmarks whose
// gates found no near state in 15 s). Pinning moves them at once; restoring the saved masks
// leaves them where they are, free to move again.

#if canImport(Glibc)
import Glibc

/// glibc's `sched_getaffinity` and `sched_setaffinity` (pid 0: the calling thread), looked up at
/// run time: Swift's Glibc module does not declare these GNU extensions.
private typealias AffinityCall = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
private let affinityCalls: (get: AffinityCall, set: AffinityCall)? = {
    let everywhere = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT
    guard let get = dlsym(everywhere, "sched_getaffinity"), let set = dlsym(everywhere, "sched_setaffinity") else {
        return nil
    }
    return (unsafeBitCast(get, to: AffinityCall.self), unsafeBitCast(set, to: AffinityCall.self))
}()

/// A thread's CPU affinity mask.
struct CPUAffinity {
    private var set = cpu_set_t()

    /// The calling thread's mask, or `nil` when the system refuses to tell.
    static func current() -> CPUAffinity? {
        guard let calls = affinityCalls else { return nil }
        var affinity = CPUAffinity()
        return calls.get(0, MemoryLayout<cpu_set_t>.size, &affinity.set) == 0 ? affinity : nil
    }

    /// A mask of the one CPU `cpu`.
    static func only(_ cpu: Int) -> CPUAffinity {
        var affinity = CPUAffinity()
        withUnsafeMutableBytes(of: &affinity.set) { bytes in bytes[cpu / 8] |= UInt8(1) << UInt8(cpu % 8) }
        return affinity
    }

    /// The CPUs in the mask, ascending.
    var cpus: [Int] {
        withUnsafeBytes(of: set) { bytes in
            var found: [Int] = []
            for (index, byte) in bytes.enumerated() where byte != 0 {
                for bit in 0..<8 where byte & (UInt8(1) << UInt8(bit)) != 0 { found.append(index * 8 + bit) }
            }
            return found
        }
    }

    /// Makes this the calling thread's mask. - Returns: whether the system accepted it.
    @discardableResult
    func apply() -> Bool {
        guard let calls = affinityCalls else { return false }
        var copy = set
        return calls.set(0, MemoryLayout<cpu_set_t>.size, &copy) == 0
    }
}
#else
/// Elsewhere the probe runs unpinned.
struct CPUAffinity {
    static func current() -> CPUAffinity? { nil }
    static func only(_ cpu: Int) -> CPUAffinity { CPUAffinity() }
    var cpus: [Int] { [] }
    @discardableResult func apply() -> Bool { false }
}
#endif
