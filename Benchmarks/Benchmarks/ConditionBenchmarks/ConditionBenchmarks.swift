// The condition benchmarks (issue 3, Condition and ConditionLock), all in one run:
//
//   Condition ping-pong / 2 threads      two threads hand a turn back and forth through a
//                                        condition (lock, wait for my turn, pass it, signal);
//                                        one operation = one round trip (two hand-offs)
//   ConditionLock hand-off / N threads   a ring of N threads: thread i takes the lock when
//                                        the condition is i and unlocks it with i + 1 mod N;
//                                        one operation = one hand-off. With 2 threads every
//                                        waiter is the right one; with 4 (oversubscribed on
//                                        this 2-core machine) three wait for other values,
//                                        which is where a targeted wake differs from a broadcast.
//
// Peers: Condition vs NSCondition and the pthread condvar; ConditionLock vs NSConditionLock,
// the hand-written pthread mutex+condvar+int, and the design alternative (Interlock's
// Condition + Int with a broadcast per unlock), which justifies ConditionLock's waiter list.
//
// Measurement: each iteration runs `operationsPerIteration` operations in total over a
// ThreadTeam (threads created once, started together); the scaling factor equals that count,
// so the scaled wall clock is the time per round trip / hand-off. Contenders of one workload
// are registered next to each other so they run close together in time.
//
// Names: "<Workload> / <n> threads / <Contender>", the convention ratios.py groups on.

import Benchmark
import BenchmarkConfiguration
import BenchmarkSupport

/// Operations per measured iteration, over all threads; equals the scaling factor.
let operationsPerIteration = BenchmarkScalingFactor.kilo.rawValue

/// Iterations are milliseconds long (each operation involves the scheduler), so few warm-up
/// iterations; the bounds keep the suite near ten seconds per contender at most.
var conditionConfiguration: Benchmark.Configuration {
    Benchmark.Configuration.interlock(warmupIterations: 3, maxDuration: .seconds(2), maxIterations: 1_000)
}

/// Registers the ping-pong of `Contender`: two threads, `operationsPerIteration` round trips.
func registerPingPong<Contender: PingPongContender>(_: Contender.Type) {
    let contender = Contender()
    let rounds = operationsPerIteration
    let team = ThreadTeam(threads: 2) { index in
        // Thread 0 plays when turn == 0 and passes to 1; thread 1 the reverse. Each plays
        // `rounds` times, so every iteration ends with turn == 0, ready for the next.
        contender.run(me: index, other: 1 - index, rounds: rounds)
    }
    Benchmark(
        "Condition ping-pong / 2 threads / \(Contender.contenderName)",
        configuration: conditionConfiguration,
        closure: { benchmark in
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: { team.stop() }
    )
}

/// Registers the hand-off ring of `Contender` over `threads` threads.
func registerHandOff<Contender: HandOffContender>(_: Contender.Type, threads: Int) {
    precondition(
        operationsPerIteration % threads == 0,
        "ConditionBenchmarks: \(threads) threads do not split \(operationsPerIteration) hand-offs evenly")
    let contender = Contender()
    let turns = operationsPerIteration / threads
    let team = ThreadTeam(threads: threads) { index in
        // Each thread takes `turns` turns; the ring returns to condition 0 at the end.
        let next = (index + 1) % threads
        for _ in 0..<turns {
            contender.lock(when: index)
            contender.unlock(with: next)
        }
    }
    Benchmark(
        "ConditionLock hand-off / \(threads) threads / \(Contender.contenderName)",
        configuration: conditionConfiguration,
        closure: { benchmark in
            // untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: { team.stop() }
    )
}

let benchmarks: @Sendable () -> Void = {
    registerPingPong(InterlockConditionPingPong.self)
    registerPingPong(NSConditionPingPong.self)
    registerPingPong(PthreadPingPong.self)
    for threads in [2, 4] {
        registerHandOff(InterlockConditionLockHandOff.self, threads: threads)
        registerHandOff(NSConditionLockHandOff.self, threads: threads)
        registerHandOff(PthreadConditionLockHandOff.self, threads: threads)
        registerHandOff(BroadcastConditionLockHandOff.self, threads: threads)
    }
}
