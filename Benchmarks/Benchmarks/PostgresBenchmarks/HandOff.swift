// How PostgresLock.lock(before:) waits, measured: in the server (pg_advisory_lock under
// lock_timeout, woken when the holder releases) against polling pg_try_advisory_lock, the other
// way the issue allowed (every 1 ms, and every 10 ms, DistributedLock's default interval).
//
//   lock hand-off / 2 threads / <Contender>
//
// One iteration is one hand-off: the benchmark's thread holds the lock and lets a second
// thread start waiting for it with its own object, pauses 2-3 ms (a random draw, so that a
// poller's phase is random; the waiter is then waiting, in the server or between polls), and
// releases it; the waiter takes it, releases it and reports back. Every contender pays the same pause and the same three round trips (tryLock, unlock,
// the waiter's unlock); what differs is how late the waiter notices the release.

import Benchmark
import BenchmarkConfiguration
import Interlock
import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

/// The waiting thread of a hand-off benchmark: waits with `acquire`, releases, reports.
final class HandOffWaiter: @unchecked Sendable {
    // `lock` is used by the waiter thread only between `start` and `done`, which order it
    // with the benchmark thread (Semaphore's signal/wait are release/acquire).
    private let lock: PostgresLock
    private let acquire: @Sendable (PostgresLock) -> Void
    private let start = Interlock.Semaphore(value: 0)
    private let done = Interlock.Semaphore(value: 0)
    private var stop = false
    private var thread = pthread_t()

    init(lock: PostgresLock, acquire: @escaping @Sendable (PostgresLock) -> Void) {
        self.lock = lock
        self.acquire = acquire
        let retained = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &thread, nil,
            { raw in
                let waiter = Unmanaged<HandOffWaiter>.fromOpaque(raw!).takeRetainedValue()
                waiter.run()
                return nil
            }, retained)
        precondition(rc == 0, "HandOffWaiter: pthread_create failed with \(rc)")
    }

    private func run() {
        while true {
            start.wait()
            if stop { return }
            acquire(lock)
            try! lock.unlock()
            done.signal()
        }
    }

    /// One hand-off from `holder`, which holds the lock.
    func handOff(from holder: PostgresLock) {
        start.signal()
        // 2-3 ms, drawn anew each time, so that a poller's phase is random, as in real use.
        var pause = timespec(tv_sec: 0, tv_nsec: Int.random(in: 2_000_000..<3_000_000))
        nanosleep(&pause, nil)
        try! holder.unlock()
        done.wait()
    }

    func finish() {
        stop = true
        start.signal()
        pthread_join(thread, nil)
    }
}

var handOffConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(
        warmupIterations: 5, maxDuration: .seconds(3), maxIterations: 500, timeUnits: .microseconds,
        scalingFactor: .one, metrics: [.wallClock, .processCPU])
}

/// Registers one way of waiting for the lock.
func registerHandOff(_ contender: String, acquire: @escaping @Sendable (PostgresLock) -> Void) {
    let state = HandOffState()
    Benchmark(
        "lock hand-off / 2 threads / \(contender)",
        configuration: handOffConfiguration,
        closure: { benchmark in
            let holder = state.holder!
            let waiter = state.waiter!
            benchmark.measure {
                for _ in benchmark.scaledIterations {
                    precondition(try! holder.tryLock(), "PostgresBenchmarks: the hand-off lock was held")
                    waiter.handOff(from: holder)
                }
            }
        },
        setup: {
            let name = "interlock-benchmarks/hand-off"
            state.holder = try! PostgresLock(connectionString: ThrowawayServer.connectionString, name: name)
            let waiting = try! PostgresLock(connectionString: ThrowawayServer.connectionString, name: name)
            state.waiter = HandOffWaiter(lock: waiting, acquire: acquire)
        },
        teardown: {
            state.waiter?.finish()
            state.waiter = nil
            state.holder = nil
        }
    )
}

/// What a hand-off benchmark's setup makes (used by one thread at a time: setup, closure,
/// teardown run in sequence).
final class HandOffState: @unchecked Sendable {
    var holder: PostgresLock?
    var waiter: HandOffWaiter?
}

/// Polls tryLock every `interval` until it succeeds.
func pollingAcquire(every interval: Int) -> @Sendable (PostgresLock) -> Void {
    { lock in
        while !(try! lock.tryLock()) {
            var pause = timespec(tv_sec: 0, tv_nsec: interval)
            nanosleep(&pause, nil)
        }
    }
}

func registerHandOffs() {
    registerHandOff("Interlock PostgresLock lock(before:), waiting in the server") { lock in
        precondition(try! lock.lock(before: .now + .seconds(30)), "PostgresBenchmarks: the hand-off timed out")
    }
    registerHandOff("Interlock PostgresLock lock(before:) async, a task waiting in the server") { lock in
        // The waiter thread hands the wait to a task and sleeps until it is granted: what the
        // hand-off measures is the task's path (the reactor's wake-up, the task's resumption).
        let granted = Interlock.Semaphore(value: 0)
        Task {
            let taken = try! await lock.lock(before: .now + .seconds(30))
            precondition(taken, "PostgresBenchmarks: the hand-off timed out")
            granted.signal()
        }
        granted.wait()
    }
    registerHandOff("polling tryLock every 1 ms", acquire: pollingAcquire(every: 1_000_000))
    registerHandOff("polling tryLock every 10 ms", acquire: pollingAcquire(every: 10_000_000))
}
