// PostgresSemaphore's benchmark: one permit of 4 taken and given back, uncontended, in two
// states of the other permits:
//
//   semaphore tryAcquire+release, 4 of 4 free / 1 thread / <Contender>
//   semaphore tryAcquire+release, 1 of 4 free / 1 thread / <Contender>   (3 held by other sessions)
//
// Contenders:
//   Interlock PostgresSemaphore          tryAcquire() + release(): two round trips whatever the
//                                        other slots hold (every slot is tried in one statement;
//                                        the release notifies only when someone waits)
//   Interlock PostgresSemaphore async    the same with the async forms, from a task
//   hand-written advisory slots (libpq)  AdvisorySlots.swift: one round trip per slot tried from
//                                        a random start, then the unlock (no token, no wake-up)

import Benchmark
import InterlockPostgres

/// The blockers and the measured object of one row (setup, closure and teardown run in
/// sequence).
final class SemaphoreCycleState: @unchecked Sendable {
    var semaphore: PostgresSemaphore?
    var blockers: [PostgresSemaphore] = []
}

func registerSemaphoreCycles() {
    for held in [0, 3] {
        let workload = "semaphore tryAcquire+release, \(4 - held) of 4 free"
        let name = "interlock-benchmarks/postgres-semaphore/\(held)"
        registerCycle("Interlock PostgresSemaphore", workload: workload) {
            let open = {
                try! PostgresSemaphore(connectionString: ThrowawayServer.connectionString, name: name, permits: 4)
            }
            let blockers = (0..<held).map { _ in open() }
            for blocker in blockers { precondition(try! blocker.tryAcquire(), "PostgresSemaphore: no free permit") }
            let semaphore = open()
            return (
                cycle: {
                    precondition(try! semaphore.tryAcquire(), "PostgresSemaphore: no free permit")
                    try! semaphore.release()
                },
                cleanup: { for blocker in blockers { try! blocker.release() } }
            )
        }
        let state = SemaphoreCycleState()
        Benchmark(
            "\(workload) / 1 thread / Interlock PostgresSemaphore async",
            configuration: postgresConfiguration,
            closure: { benchmark in
                let semaphore = state.semaphore!
                await benchmark.measureAsync {
                    for _ in benchmark.scaledIterations {
                        let taken = try! await semaphore.tryAcquire()
                        precondition(taken, "PostgresSemaphore: no free permit")
                        try! await semaphore.release()
                    }
                }
            },
            setup: {
                let open = {
                    try! PostgresSemaphore(
                        connectionString: ThrowawayServer.connectionString, name: name + "/async", permits: 4)
                }
                state.blockers = (0..<held).map { _ in open() }
                for blocker in state.blockers { precondition(try! blocker.tryAcquire(), "no free permit") }
                state.semaphore = open()
            },
            teardown: {
                for blocker in state.blockers { try! blocker.release() }
                state.blockers = []
                state.semaphore = nil
            }
        )
        registerCycle("hand-written advisory slots (libpq)", workload: workload) {
            // Any keys: the server is this process's own.
            let keys = (0..<4).map { Int64(0x696c_6b5f_736c_6f00) + Int64(held * 16 + $0) }
            let blockers = AdvisorySlots(connectionString: ThrowawayServer.connectionString, keys: keys)
            for index in 0..<held { blockers.take(index) }
            let slots = AdvisorySlots(connectionString: ThrowawayServer.connectionString, keys: keys)
            return (
                cycle: {
                    guard let index = slots.acquire() else { fatalError("PostgresBenchmarks: no free slot") }
                    slots.release(index)
                },
                cleanup: { for index in 0..<held { blockers.release(index) } }
            )
        }
    }
}
