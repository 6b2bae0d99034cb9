// The channel benchmarks (issue 33): Interlock's BoundedChannel against a pthread mutex + ring +
// two condition variables, a DispatchSemaphore bounded buffer and Concurrency Kit's ck_ring
// (Sources/ChannelContenders), all in one run:
//
//   "Channel 1P1C, capacity 64 / 2 threads"   one producer, one consumer
//   "Channel 2P2C, capacity 64 / 4 threads"   two of each (oversubscribing the 2 cores)
//   "Channel 4P4C, capacity 64 / 8 threads"   four of each
//   "Channel rendezvous 1P1C / 2 threads"     capacity 0: each send returns once its element
//                                             was taken (ck_ring cannot do that: not run)
//
// Measurement: each iteration transfers `transfers` elements (1...transfers), split evenly over
// the producers and over the consumers of a ThreadTeam (threads 0..<P produce, the rest consume);
// scaling factor = transfers, so the scaled wall clock is the time per element, and the CPU
// column is the process's CPU time per element. Every iteration checks that the consumers took
// exactly the sum put in (a lost or duplicated element traps, naming the contender).
// Names: "<Workload> / <n> threads / <Contender>" for ratios.py.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport
import ChannelContenders
import Interlock

var channelConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 20, maxDuration: .seconds(1), maxIterations: 20_000)
}

/// Elements per iteration, over all producers; equals the scaling factor (`.kilo`).
let transfers = 1_000

func registerChannel<C: ChannelContender>(_: C.Type, producers: Int, consumers: Int, capacity: Int, workload: String) {
    if capacity == 0 && !C.offersRendezvous { return }
    precondition(transfers % producers == 0 && transfers % consumers == 0, "ChannelBenchmarks: uneven split")
    let channel = C(capacity: capacity)
    let taken = AtomicInt(0)
    let threads = producers + consumers
    registerTeamBenchmark(
        "\(workload) / \(threads) threads / \(C.contenderName)", threads: threads, configuration: channelConfiguration,
        work: { index in
            if index < producers {
                let share = transfers / producers
                for value in (index * share + 1)...((index + 1) * share) { channel.send(value) }
            } else {
                var sum = 0
                for _ in 0..<(transfers / consumers) { sum &+= channel.receive() }
                // Relaxed: read after the team's rounds, which the team's join orders.
                _ = taken.add(sum, ordering: .relaxed)
            }
        },
        check: { rounds in
            precondition(
                taken.load(ordering: .relaxed) == rounds * transfers * (transfers + 1) / 2,
                "ChannelBenchmarks: \(C.contenderName) lost or duplicated elements")
        })
}

func registerChannels<C: ChannelContender>(_ contender: C.Type) {
    registerChannel(contender, producers: 1, consumers: 1, capacity: 64, workload: "Channel 1P1C, capacity 64")
    registerChannel(contender, producers: 2, consumers: 2, capacity: 64, workload: "Channel 2P2C, capacity 64")
    registerChannel(contender, producers: 4, consumers: 4, capacity: 64, workload: "Channel 4P4C, capacity 64")
    registerChannel(contender, producers: 1, consumers: 1, capacity: 0, workload: "Channel rendezvous 1P1C")
}

let benchmarks: @Sendable () -> Void = {
    registerChannels(InterlockChannel.self)
    registerChannels(CondvarRingChannel.self)
    registerChannels(DispatchSemaphoreChannel.self)
    registerChannels(CKRingChannel.self)
}
