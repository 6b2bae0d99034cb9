// The task-side channel benchmarks (issue 33): BoundedChannel's async send and receive against
// the peers of AsyncChannelContenders.swift, all in one run, on the cooperative pool:
//
//   "Channel tasks 1P1C, capacity 64 / 2 tasks"   one producing task, one consuming task
//   "Channel tasks 4P4C, capacity 64 / 8 tasks"   four of each (AsyncStream: one consumer only,
//                                                 not run)
//   "Channel tasks rendezvous 1P1C / 2 tasks"     capacity 0 (AsyncStream: not a rendezvous,
//                                                 not run)
//
// One operation is one element; an iteration transfers 1,000 (the scaling factor) and checks
// their sum. Names: "<Workload> / <n> tasks / <Contender>" for ratios.py.

import Benchmark
import BenchmarkConfiguration

var asyncChannelConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 20, maxDuration: .milliseconds(1_000), maxIterations: 20_000)
}

/// Elements per iteration: equals the scaling factor (`.kilo`).
let transfers = 1_000

func registerAsyncChannel<C: AsyncChannelContender>(
    _: C.Type, producers: Int, consumers: Int, capacity: Int, workload: String
) {
    if consumers > 1 && !C.offersManyConsumers { return }
    if capacity == 0 && C.self == UnboundedAsyncStream.self { return }
    Benchmark(
        "\(workload) / \(producers + consumers) tasks / \(C.contenderName)", configuration: asyncChannelConfiguration
    ) { benchmark in
        let channel = C(capacity: capacity)
        let share = transfers / producers
        await benchmark.measureAsync {
            let total = await withTaskGroup(of: Int.self) { group in
                for index in 0..<producers {
                    group.addTask {
                        await channel.produce((index * share + 1)...((index + 1) * share))
                        return 0
                    }
                }
                for _ in 0..<consumers {
                    group.addTask { await channel.consume(transfers / consumers) }
                }
                return await group.reduce(0, +)
            }
            precondition(
                total == transfers * (transfers + 1) / 2,
                "AsyncChannelBenchmarks: \(C.contenderName) lost or duplicated elements")
        }
    }
}

func registerAsyncChannels<C: AsyncChannelContender>(_ contender: C.Type) {
    registerAsyncChannel(
        contender, producers: 1, consumers: 1, capacity: 64, workload: "Channel tasks 1P1C, capacity 64")
    registerAsyncChannel(
        contender, producers: 4, consumers: 4, capacity: 64, workload: "Channel tasks 4P4C, capacity 64")
    registerAsyncChannel(
        contender, producers: 1, consumers: 1, capacity: 0, workload: "Channel tasks rendezvous 1P1C")
}

let benchmarks: @Sendable () -> Void = {
    registerAsyncChannels(InterlockAsyncChannel.self)
    registerAsyncChannels(MutexDequeChannel.self)
    registerAsyncChannels(AsyncAlgorithmsChannel.self)
    registerAsyncChannels(UnboundedAsyncStream.self)
}
