// Placement: which CPU each thread of a team runs on.
//
// Why: with more threads than CPUs, the scheduler places a team's threads once and then mostly
// leaves them there, for thousands of rounds, and not always evenly. A C replica of a 4-thread
// round on the 2-vCPU development VM (1,000 spin-lock increments per round, the ThreadTeam
// protocol) took 8.9-9.5 us per round while the threads sat two and two on the CPUs, and
// 13.3-13.7 us while they sat three and one, in six runs of the same binary; each run landed
// in one of the two for most of its rounds. The benchmark of one contender could land in the
// first and the next contender's in the second: the 4-thread lock rows read 0.67-1.62 (spin
// lock) and 0.69-1.32 (mutex) over five runs of unchanged code, and in quick runs both ours
// and Concurrency Kit's spin lock read either 5.3 or 7.8 ns per operation. Pinned two and two,
// the replica took 8.83-8.90 us in five runs of six (9.99 in the sixth).
//
// What: a spread team of two or more threads pins thread i to the i-th CPU of the process's
// affinity mask, modulo their number, from start() until stop() (the caller, thread 0, gets its
// own mask back at stop()). Single-thread benchmarks are never pinned. Every contender of a run
// goes through the same placement.
//
// The placement is chosen with the environment variable ILK_BENCH_PLACEMENT:
//   free (default)  no pinning: the scheduler places the threads
//   spread          pin as above
// Not yet the default: five runs of LocksBenchmarks spread (2026-11-23) concentrated the
// 4-thread lock rows (spin lock 0.89-0.995 in four runs of five, mutex 0.86-0.97) but kept an
// outlier run each (1.46, 1.32), and in one run four consecutive 4-thread teams read neither
// interconnect state on any probe, so their gates spent their 15 s (the known defect in
// Interconnect.swift; once in the unpinned sets). The tables in the README are unpinned until a
// full-suite set says which placement gives steadier single runs.
// Pinning that fails (a sandbox that forbids it) is reported once on standard error, and the
// team runs unpinned.

import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a team's threads are placed on the CPUs (see the file comment).
public enum ThreadPlacement: String, Sendable, CaseIterable {
    /// Thread i runs on the i-th allowed CPU, modulo their number.
    case spread
    /// The scheduler places the threads.
    case free

    /// The placement asked for by `ILK_BENCH_PLACEMENT` (`free` when unset).
    /// - Warning: Any other value traps, naming the variable.
    public static let requested = environmentChoice("ILK_BENCH_PLACEMENT", default: ThreadPlacement.free)
}

#if os(Linux)
/// glibc's affinity calls are GNU extensions, which Swift's Glibc module does not declare
/// (no _GNU_SOURCE): they are looked up once, by name, in the C library.
private enum Affinity {
    typealias ProcessGet = @convention(c) (pid_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32
    typealias ThreadGet = @convention(c) (pthread_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32
    typealias ThreadSet = @convention(c) (pthread_t, Int, UnsafePointer<cpu_set_t>) -> Int32
    typealias GetCPU = @convention(c) () -> Int32

    static func lookUp<F>(_ name: String, as _: F.Type) -> F {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("BenchmarkSupport: the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: F.self)
    }

    nonisolated(unsafe) static let processGet = lookUp("sched_getaffinity", as: ProcessGet.self)
    nonisolated(unsafe) static let threadGet = lookUp("pthread_getaffinity_np", as: ThreadGet.self)
    nonisolated(unsafe) static let threadSet = lookUp("pthread_setaffinity_np", as: ThreadSet.self)
    nonisolated(unsafe) static let getCPU = lookUp("sched_getcpu", as: GetCPU.self)
}

/// The CPUs the process may run on, in increasing order (empty when they cannot be read).
public func allowedCPUs() -> [Int32] {
    var set = cpu_set_t()
    guard Affinity.processGet(0, MemoryLayout<cpu_set_t>.size, &set) == 0 else { return [] }
    return withUnsafeBytes(of: &set) { bytes in
        (0..<Int32(bytes.count * 8)).filter { cpu in bytes[Int(cpu) / 8] & (1 << UInt8(cpu % 8)) != 0 }
    }
}

/// The CPU the calling thread runs on now (`sched_getcpu`).
public func currentCPU() -> Int32 { Affinity.getCPU() }

/// The affinity mask of the calling thread (nil when it cannot be read).
public func currentThreadAffinity() -> cpu_set_t? {
    var set = cpu_set_t()
    return Affinity.threadGet(pthread_self(), MemoryLayout<cpu_set_t>.size, &set) == 0 ? set : nil
}

/// Sets the calling thread's affinity mask.
/// - Returns: 0, or the error number of `pthread_setaffinity_np`.
@discardableResult
func setCurrentThreadAffinity(_ set: cpu_set_t) -> Int32 {
    var set = set
    return Affinity.threadSet(pthread_self(), MemoryLayout<cpu_set_t>.size, &set)
}

/// Pins the calling thread to `cpu`.
/// - Returns: 0, or the error number of `pthread_setaffinity_np`.
func pinCurrentThread(to cpu: Int32) -> Int32 {
    var set = cpu_set_t()
    withUnsafeMutableBytes(of: &set) { bytes in
        bytes[Int(cpu) / 8] |= 1 << UInt8(cpu % 8)
    }
    return setCurrentThreadAffinity(set)
}

/// The CPU thread `index` of a spread team runs on, given the allowed CPUs.
func spreadCPU(forThread index: Int, of cpus: [Int32]) -> Int32 {
    cpus[index % cpus.count]
}

/// Reports a failed pinning once per process.
func reportPinningFailure(_ error: Int32) {
    guard !pinningFailureReported.exchange(true, ordering: .relaxed) else { return }
    let line = "ThreadTeam: pinning threads failed (\(String(cString: strerror(error)))); teams run unpinned\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

/// Whether `reportPinningFailure` has written its line (relaxed: only the line's uniqueness).
private let pinningFailureReported = Atomic<Bool>(false)
#endif
