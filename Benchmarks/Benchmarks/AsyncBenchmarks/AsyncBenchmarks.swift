// The async benchmarks: Interlock's Semaphore (async waits) and AsyncLazy in Swift concurrency
// against what a Swift user writes by hand (an actor semaphore; a Synchronization.Mutex with a
// FIFO of CheckedContinuations, without cancellation and with it; a Task stored behind a Mutex),
// all in one run, on the cooperative pool (one thread per core). Only the cancellable peer does
// what `wait() async throws` promises (a cancelled waiter resumed at once); the others are what
// users write, and are listed as they are.
//
// Workloads (one operation is one wait+signal, one hand-off, or one read):
//   "Async wait+signal / 1 task"       uncontended: await wait, signal, on a semaphore of value 1
//   "Async hand-off / 2 tasks"         ping-pong: task A signals `ping` and awaits `pong`, task
//                                      B awaits `ping` and signals `pong` (both start at 0):
//                                      one operation = one round trip
//   "Async pool of 4 / 64 tasks"       64 tasks each take a unit of a semaphore of value 4,
//                                      yield once holding it, and signal it back
//   "AsyncLazy done / 1 task"          a read of a value computed before
//   "AsyncLazy fresh value / 64 tasks" 64 child tasks ask a new lazy value at once while it is
//                                      computed (one suspension): one operation = one value
//                                      delivered to all 64 (scaling factor 1); issue 32 reports
//                                      an independent run's 4.93x a Task cached in an actor
//
// Measurement: each iteration runs `operations` operations (1,000, the scaling factor), so the
// scaled wall clock is the time per operation. Names: "<Workload> / <n> task(s) / <Contender>"
// for ratios.py.

import Benchmark
import BenchmarkConfiguration

var asyncConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 20, maxDuration: .milliseconds(1_000), maxIterations: 20_000)
}

/// Operations per iteration: equals the scaling factor (`.kilo`).
let operations = 1_000

func registerSemaphore<C: AsyncSemaphoreContender>(_: C.Type) {
    Benchmark("Async wait+signal / 1 task / \(C.contenderName)", configuration: asyncConfiguration) { benchmark in
        let semaphore = C(value: 1)
        try await benchmark.measureAsync {
            for _ in 0..<operations {
                try await semaphore.wait()
                await semaphore.signal()
            }
        }
    }
    Benchmark("Async hand-off / 2 tasks / \(C.contenderName)", configuration: asyncConfiguration) { benchmark in
        let ping = C(value: 0)
        let pong = C(value: 0)
        try await benchmark.measureAsync {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for _ in 0..<operations {
                        try await ping.wait()
                        await pong.signal()
                    }
                }
                for _ in 0..<operations {
                    await ping.signal()
                    try await pong.wait()
                }
                try await group.waitForAll()
            }
        }
    }
    Benchmark("Async pool of 4 / 64 tasks / \(C.contenderName)", configuration: asyncConfiguration) { benchmark in
        let pool = C(value: 4)
        try await benchmark.measureAsync {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<64 {
                    // 1,000 operations in all: 40 tasks do 16, 24 do 15.
                    let share = operations / 64 + (index < operations % 64 ? 1 : 0)
                    group.addTask {
                        for _ in 0..<share {
                            try await pool.wait()
                            await Task.yield()
                            await pool.signal()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}

/// One fresh value per iteration (scaling factor 1): the time per value delivered to 64 tasks.
var freshValueConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(
        warmupIterations: 20, maxDuration: .milliseconds(1_000), maxIterations: 20_000, scalingFactor: .one)
}

func registerLazy<C: AsyncLazyContender>(_: C.Type) {
    // 64 tasks ask a new lazy value at once; its computation suspends once (a Task.yield), so
    // most of them find it running and wait for it. The 64 child tasks cost every contender alike.
    Benchmark("AsyncLazy fresh value / 64 tasks / \(C.contenderName)", configuration: freshValueConfiguration) {
        benchmark in
        let lazy = C {
            await Task.yield()
            return 42
        }
        let sum = try await benchmark.measureAsync {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<64 { group.addTask { try await lazy.get() } }
                return try await group.reduce(0, +)
            }
        }
        precondition(sum == 64 * 42, "AsyncBenchmarks: \(C.contenderName) delivered a wrong value")
    }
    let done = C { 42 }
    Benchmark("AsyncLazy done / 1 task / \(C.contenderName)", configuration: asyncConfiguration) { benchmark in
        _ = try await done.get()
        try await benchmark.measureAsync {
            for _ in 0..<operations { blackHole(try await done.get()) }
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    registerSemaphore(InterlockAsyncSemaphore.self)
    registerSemaphore(ActorSemaphoreContender.self)
    registerSemaphore(MutexContinuationSemaphore.self)
    registerSemaphore(CancellableMutexContinuationSemaphore.self)
    registerLazy(InterlockAsyncLazy.self)
    registerLazy(MutexTaskLazy.self)
}
