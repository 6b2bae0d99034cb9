// The distributed-lock benchmarks (issue 4), all in one run: the cost of one uncontended
// acquire+release cycle of a file-system lock, on the file system of the scratch directory
// (a fresh mkdtemp under $INTERLOCK_BENCH_DIR, default /tmp; point it at an NFS mount to
// measure NFS).
//
//   DistributedLock tryLock+unlock / 1 thread / <Contender>
//
// Contenders:
//   Interlock DistributedLock           tryLock() + unlock() (link(2) of a private file,
//                                       token-checked removal; see DistributedLock.swift)
//   Interlock DistributedLock durable   the same with the record fsync'ed before the link
//   O_CREAT|O_EXCL lock file + write    open(O_CREAT|O_EXCL), write a ~100-byte record,
//                                       close; unlink - the classic lock file, without
//                                       ownership check on release and not NFS-safe before v3
//   mkdir + rmdir                       the lock directory, no record at all
//   flock                               flock(LOCK_EX|LOCK_NB) + flock(LOCK_UN) on a file kept
//                                       open: no file-system entry is created; not a like-for-
//                                       like peer (advisory, per open file, unreliable on NFS)
//
// Measurement: each iteration runs 1,000 cycles (scaling factor kilo), so the scaled wall
// clock is the time per cycle. Names follow "<Workload> / <threads> / <Contender>" for ratios.py.

import Benchmark
import BenchmarkConfiguration
import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Cycles per measured iteration; equals the scaling factor.
let cyclesPerIteration = BenchmarkScalingFactor.kilo.rawValue

var distributedLockConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(
        warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 200, timeUnits: .microseconds,
        metrics: [.wallClock, .processCPU, .throughput, .syscalls])
}

/// A fresh scratch directory for one contender, removed (with the files the contender left,
/// which must be none but its own) by `remove()`.
final class ScratchDirectory: @unchecked Sendable {
    let path: String

    init() {
        let base = getenv("INTERLOCK_BENCH_DIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/interlock-dlock-bench-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            fatalError("DistributedLockBenchmarks: mkdtemp under \(base) failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    func remove() {
        for name in ["lock", "lockdir", "flock"] { unlink(path + "/" + name); rmdir(path + "/" + name) }
        rmdir(path)
    }
}

/// One contender's scratch directory and cycle, made in the benchmark's setup (not at
/// registration, which also happens when the plugin only lists the benchmarks) and removed in
/// its teardown.
final class CycleState: @unchecked Sendable {
    // Written by setup and teardown, read by the measured closure: the benchmark runs them in
    // sequence on one thread.
    var directory: ScratchDirectory?
    var cycle: (@Sendable () -> Void)?
}

/// Registers one contender: `makeCycle(directory)` returns the cycle to run 1,000 times per
/// iteration; the cycle traps when the lock was unexpectedly held (the benchmark is uncontended).
func registerCycle(_ contender: String, _ makeCycle: @escaping @Sendable (String) -> (@Sendable () -> Void)) {
    let state = CycleState()
    Benchmark(
        "DistributedLock tryLock+unlock / 1 thread / \(contender)",
        configuration: distributedLockConfiguration,
        closure: { benchmark in
            let cycle = state.cycle!
            benchmark.measure { for _ in benchmark.scaledIterations { cycle() } }
        },
        setup: {
            let directory = ScratchDirectory()
            state.directory = directory
            state.cycle = makeCycle(directory.path)
        },
        teardown: {
            state.cycle = nil  // releases a DistributedLock before its directory goes
            state.directory?.remove()
            state.directory = nil
        }
    )
}

/// A record like DistributedLock's, for the lock-file peer.
let peerRecord = Array(
    "interlock-distributed-lock 1\npid=\(getpid())\nhost=benchmark\ntime=1700000000.000000000\ntoken=0123456789abcdef0123456789abcdef\n"
        .utf8)

let benchmarks: @Sendable () -> Void = {
    registerCycle("Interlock DistributedLock") { directory in
        let lock = try! DistributedLock(path: directory + "/lock")
        return {
            precondition(try! lock.tryLock(), "DistributedLock was held")
            try! lock.unlock()
        }
    }
    registerCycle("Interlock DistributedLock durable") { directory in
        let lock = try! DistributedLock(path: directory + "/lock", durable: true)
        return {
            precondition(try! lock.tryLock(), "DistributedLock was held")
            try! lock.unlock()
        }
    }
    registerCycle("O_CREAT|O_EXCL lock file + write") { directory in
        let path = directory + "/lock"
        return {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            precondition(fd >= 0, "lock file was held: \(errno)")
            precondition(write(fd, peerRecord, peerRecord.count) == peerRecord.count, "write failed")
            close(fd)
            unlink(path)
        }
    }
    registerCycle("mkdir + rmdir") { directory in
        let path = directory + "/lockdir"
        return {
            precondition(mkdir(path, 0o777) == 0, "lock directory was held: \(errno)")
            rmdir(path)
        }
    }
    registerCycle("flock") { directory in
        let fd = open(directory + "/flock", O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        precondition(fd >= 0, "open failed: \(errno)")
        return {
            precondition(flock(fd, LOCK_EX | LOCK_NB) == 0, "flock was held: \(errno)")
            flock(fd, LOCK_UN)
        }
    }
}
