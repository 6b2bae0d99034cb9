// The workloads of the interleaved runner, with their contenders: the waiting rows whose
// package-benchmark figures go bimodal beside a load (Benchmarks/README.md, "Interleaved
// rounds"), each built on the same contender types as WaitingBenchmarks, so that a row here and
// the row of the same name there measure the same code. The lock, synchronized and queue
// workloads are in files of their own.
//
// One operation: a wait and a signal of one thread (pools), one item handed over (hand-off), one
// fork-join (groups). Every workload checks its result after each run (units conserved, every
// increment made), so a contender that loses a unit or a wake-up fails the run instead of
// reporting a figure.

import BenchmarkSupport
import ChannelContenders
import Interlock
import WaitingContenders

/// One contender of a workload: what runs `operations` operations on a started team.
struct Contender {
    let name: String
    let isInterlock: Bool
    /// An unlike reference, not a peer: shown, but never the fastest peer (Rounds.swift).
    var isUnlike = false
    /// Creates the contender's objects and its team (not started); `operations` per round.
    let make: (_ operations: Int) -> Run
}

/// A contender made ready for rounds: its team, and the check that follows each round.
struct Run {
    let team: ThreadTeam
    let check: () -> Void
}

/// A workload: its name ("<Workload> / <n> threads", as in the package-benchmark tables).
struct Workload {
    let name: String
    let threads: Int
    /// The share of `--operations` a run makes: 1 for the pools; 1/10 where an operation takes
    /// microseconds for some contender (a peer's hand-off through the kernel, a fork-join).
    var scale: Double = 1
    var contenders: [Contender]
}

/// The workloads, in the order they run.
func allWorkloads() -> [Workload] {
    [
        semaphorePool(atomicIncrement: true),
        semaphorePool(atomicIncrement: false),
        semaphoreHandOff(),
        groupForkJoin(),
        channel(producers: 1, consumers: 1),
        channel(producers: 2, consumers: 2),
        channel(producers: 4, consumers: 4),
        channel(producers: 1, consumers: 1, capacity: 0),
    ] + lockWorkloads() + synchronizedWorkloads() + queueWorkloads()
}

/// Producers send their share of `operations` elements through a channel of capacity 64 (or 0:
/// a rendezvous, where each send returns once a receiver has taken its element) that consumers
/// drain (as ChannelBenchmarks, in longer runs); one operation: one element. The rendezvous
/// has no ck_ring row (ck_ring has no capacity 0) and a tenth of the operations (a hand-off
/// through the kernel takes microseconds for some contender).
private func channel(producers: Int, consumers: Int, capacity: Int = 64) -> Workload {
    func contender<C: ChannelContender>(_ type: C.Type) -> Contender {
        Contender(
            name: type.contenderName, isInterlock: type == InterlockChannel.self, isUnlike: type == CKRingChannel.self
        ) { operations in
            let channel = type.init(capacity: capacity)
            let taken = AtomicInt(0)
            let share = operations / producers
            let team = ThreadTeam(threads: producers + consumers, idleNaps: true) { index in
                if index < producers {
                    for value in 1...share { channel.send(value) }
                } else {
                    var sum = 0
                    for _ in 0..<(share * producers / consumers) { sum &+= channel.receive() }
                    _ = taken.add(sum, ordering: .relaxed)  // Relaxed: read after the round's join.
                }
            }
            return Run(team: team) {
                precondition(
                    taken.exchange(0, ordering: .relaxed) == producers * share * (share + 1) / 2,
                    "Interleaved: \(type.contenderName) lost or duplicated elements")
            }
        }
    }
    let kind = capacity == 0 ? "rendezvous 1P1C" : "\(producers)P\(consumers)C, capacity \(capacity)"
    return Workload(
        name: "Channel \(kind) / \(producers + consumers) threads",
        threads: producers + consumers, scale: capacity == 0 ? 0.1 : 1,
        contenders: [
            contender(InterlockChannel.self), contender(CondvarRingChannel.self),
            contender(DispatchSemaphoreChannel.self),
        ] + (capacity == 0 ? [] : [contender(CKRingChannel.self)]))
}

private func semaphoreContenders(_ make: (any SemaphoreContender.Type) -> Contender) -> [Contender] {
    [make(InterlockSemaphore.self), make(DispatchSemaphoreContender.self), make(POSIXSemaphore.self)]
}

/// Four threads share a semaphore of 2 units: wait, hold (one atomic increment, or a few dozen
/// multiply-adds), signal.
private func semaphorePool(atomicIncrement: Bool) -> Workload {
    let threads = 4
    let name =
        atomicIncrement ? "Semaphore pool of 2, atomic increment / 4 threads" : "Semaphore pool of 2 / 4 threads"
    return Workload(
        name: name, threads: threads,
        contenders: semaphoreContenders { type in
            Contender(name: type.contenderName, isInterlock: type == InterlockSemaphore.self) { operations in
                let pool = type.init(value: 2)
                let increments = AtomicInt(0)
                let share = operations / threads
                let team = ThreadTeam(threads: threads, idleNaps: true) { _ in
                    var sink = 0
                    for i in 0..<share {
                        pool.wait()
                        if atomicIncrement {
                            _ = increments.increment(ordering: .relaxed)  // Relaxed: a count, checked after the round.
                        } else {
                            sink &+= holderWork(i)
                        }
                        pool.signal()
                    }
                    precondition(sink != 1, "unreachable: keeps the work alive")
                }
                return Run(team: team) {
                    precondition(
                        !atomicIncrement || increments.exchange(0, ordering: .relaxed) == share * threads,
                        "Interleaved: \(type.contenderName) lost increments")
                    precondition(
                        pool.tryTake() && pool.tryTake() && !pool.tryTake(),
                        "Interleaved: \(type.contenderName)'s pool lost or made units")
                    pool.signal()
                    pool.signal()
                }
            }
        })
}

/// A producer and a consumer pass items through two semaphores (items from 0, spaces from 1).
private func semaphoreHandOff() -> Workload {
    Workload(
        name: "Semaphore hand-off / 2 threads", threads: 2, scale: 0.1,
        contenders: semaphoreContenders { type in
            Contender(name: type.contenderName, isInterlock: type == InterlockSemaphore.self) { operations in
                let items = type.init(value: 0)
                let spaces = type.init(value: 1)
                let team = ThreadTeam(threads: 2, idleNaps: true) { index in
                    if index == 0 {
                        for _ in 0..<operations { spaces.wait(); items.signal() }
                    } else {
                        for _ in 0..<operations { items.wait(); spaces.signal() }
                    }
                }
                return Run(team: team) {
                    precondition(
                        !items.tryTake() && spaces.tryTake(), "Interleaved: \(type.contenderName) lost or made units")
                    spaces.signal()
                }
            }
        })
}

/// Thread 0 enters 3 tasks and releases threads 1-3 (a generation word, the same code for every
/// contender), each leaves, thread 0 waits.
private func groupForkJoin() -> Workload {
    func contender<G: GroupContender>(_ type: G.Type) -> Contender {
        Contender(name: type.contenderName, isInterlock: type == InterlockWaitGroup.self) { operations in
            let forkJoin = ForkJoin<G>()
            let team = ThreadTeam(threads: 4, idleNaps: true) { index in forkJoin.run(index, operations: operations) }
            return Run(team: team) {}
        }
    }
    return Workload(
        name: "WaitGroup fork-join / 4 threads", threads: 4, scale: 0.1,
        contenders: [contender(InterlockWaitGroup.self), contender(DispatchGroupContender.self)])
}
