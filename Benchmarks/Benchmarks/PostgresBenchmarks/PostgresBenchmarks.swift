// The PostgresLock benchmarks, all in one run: the cost of one uncontended acquire+release cycle
// of a lock on a PostgreSQL server on this machine (a throwaway server that the benchmark starts
// itself, ThrowawayServer.swift), reached over its Unix socket.
//
//   tryLock+unlock / 1 thread / <Contender>
//
// Contenders:
//   Interlock PostgresLock              tryLock() + unlock() on one object: two round trips
//                                       (pg_try_advisory_lock with the fencing token's nextval
//                                       in the same statement; pg_advisory_unlock)
//   Interlock PostgresLock async        the same with the async forms, from a task: each round
//                                       trip is sent with libpq's asynchronous interface and
//                                       awaited in the reactor (an epoll thread resumes the task):
//                                       the price of never blocking a cooperative thread
//   bare libpq pg_try_advisory_lock     the floor: the same two round trips through libpq
//     + pg_advisory_unlock              directly, prepared statements, no token
//                                       (AdvisorySlots.swift, one slot); ratios.py compares
//                                       PostgresLock with it
//   Interlock DistributedLock           tryLock() + unlock() of the file lock, in a fresh
//     (local disk)                      directory under /var/tmp (on disk, where /tmp may be a
//                                       tmpfs): a reference for scale, the other way to share a
//                                       lock, between processes of one host; neither subject
//                                       nor peer in ratios.py (REFERENCE_CONTENDERS)
//
// And PostgresSemaphore's (SemaphoreBenchmarks.swift): tryAcquire+release of one permit of 4,
// with all 4 free and with 3 held by other sessions, against advisory slots written by hand.
//
// Measurement: each iteration runs 1,000 cycles (scaling factor kilo), so the scaled wall clock
// is the time per cycle. Names follow "<Workload> / <threads> / <Contender>" for ratios.py.
// Everything that connects or creates files happens in a benchmark's setup, never at
// registration (which also runs when the plugin only lists the benchmarks).

import Benchmark
import BenchmarkConfiguration
import Interlock
import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

var postgresConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(
        warmupIterations: 2, maxDuration: .seconds(3), maxIterations: 200, timeUnits: .microseconds,
        metrics: [.wallClock, .processCPU, .throughput, .syscalls])
}

/// A contender's cycle and what its teardown undoes, made in the benchmark's setup.
final class CycleState: @unchecked Sendable {
    // Written by setup and teardown, read by the measured closure: the benchmark runs them in
    // sequence on one thread.
    var cycle: (@Sendable () -> Void)?
    var cleanup: (@Sendable () -> Void)?
}

/// Registers one contender: `make()` returns the cycle to run 1,000 times per iteration and
/// what to do afterwards; the cycle traps when the lock was unexpectedly held (uncontended).
func registerCycle(
    _ contender: String, workload: String = "tryLock+unlock",
    _ make: @escaping @Sendable () -> (cycle: @Sendable () -> Void, cleanup: @Sendable () -> Void)
) {
    let state = CycleState()
    Benchmark(
        "\(workload) / 1 thread / \(contender)",
        configuration: postgresConfiguration,
        closure: { benchmark in
            let cycle = state.cycle!
            benchmark.measure { for _ in benchmark.scaledIterations { cycle() } }
        },
        setup: {
            let made = make()
            state.cycle = made.cycle
            state.cleanup = made.cleanup
        },
        teardown: {
            state.cycle = nil  // releases the lock object before its directory or server goes
            state.cleanup?()
            state.cleanup = nil
        }
    )
}

/// The async contender: tryLock() async + unlock() async from the benchmark's task.
func registerAsyncCycle() {
    let state = AsyncCycleState()
    Benchmark(
        "tryLock+unlock / 1 thread / Interlock PostgresLock async",
        configuration: postgresConfiguration,
        closure: { benchmark in
            let lock = state.lock!
            await benchmark.measureAsync {
                for _ in benchmark.scaledIterations {
                    let taken = try! await lock.tryLock()
                    precondition(taken, "PostgresLock was held")
                    try! await lock.unlock()
                }
            }
        },
        setup: {
            state.lock = try! PostgresLock(
                connectionString: ThrowawayServer.connectionString, name: "interlock-benchmarks/postgres-lock-async")
        },
        teardown: { state.lock = nil }
    )
}

/// The async contender's lock (setup, closure and teardown run in sequence).
final class AsyncCycleState: @unchecked Sendable {
    var lock: PostgresLock?
}

/// A fresh directory under /var/tmp for the DistributedLock reference.
func makeDiskDirectory() -> String {
    var template = Array("/var/tmp/interlock-pg-bench-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        fatalError("PostgresBenchmarks: mkdtemp under /var/tmp failed: \(String(cString: strerror(errno)))")
    }
    return String(cString: made)
}

let benchmarks: @Sendable () -> Void = {
    registerHandOffs()
    registerSemaphoreCycles()
    registerCycle("Interlock PostgresLock") {
        let lock: PostgresLock
        do {
            lock = try PostgresLock(
                connectionString: ThrowawayServer.connectionString, name: "interlock-benchmarks/postgres-lock")
        } catch {
            fatalError("PostgresBenchmarks: \(error)")
        }
        return (
            cycle: {
                precondition(try! lock.tryLock(), "PostgresLock was held")
                try! lock.unlock()
            },
            cleanup: {}
        )
    }
    registerAsyncCycle()
    registerCycle("bare libpq pg_try_advisory_lock + pg_advisory_unlock") {
        // Any key: the server is this process's own. 0x696c6b5f70656572 is "ilk_peer".
        let lock = AdvisorySlots(connectionString: ThrowawayServer.connectionString, keys: [0x696c_6b5f_7065_6572])
        return (
            cycle: {
                lock.take(0)
                lock.release(0)
            }, cleanup: {}
        )
    }
    registerCycle("Interlock DistributedLock (local disk)") {
        let directory = makeDiskDirectory()
        let lock = try! DistributedLock(path: directory + "/lock")
        return (
            cycle: {
                precondition(try! lock.tryLock(), "DistributedLock was held")
                try! lock.unlock()
            },
            cleanup: {
                unlink(directory + "/lock")
                rmdir(directory)
            }
        )
    }
}
