// The contract every contender of the queue benchmarks meets, and the three workloads.
//
// A contender is one FIFO queue or LIFO stack of machine words, created once per benchmark
// (at registration) and held in a `let` for the whole run, so the measured loop neither
// allocates the container nor retains it. Interlock's types are called directly (their
// operations are inlinable generics, specialized here); the C and C++ peers are called through
// their C functions (one direct call per operation), as any user of those libraries would.
//
// The workloads are generic over the contender and `@inline(__always)`, so each benchmark's
// closure holds one specialized loop per contender: no protocol witness call, no existential.
// Shared by QueueBenchmarks (package-benchmark) and Interleaved (interleaved rounds):
// package-visible, every hot member inlinable.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which end `take` removes from.
package enum QueueDiscipline: String, Sendable {
    case fifo = "FIFO"
    case lifo = "LIFO"
}

/// One concurrent FIFO queue or LIFO stack of one library.
package protocol QueueContender: AnyObject, Sendable {
    /// The contender's name in benchmark names: `<Workload> / <threads> / <contenderName>`.
    static var contenderName: String { get }
    /// FIFO (a queue) or LIFO (a stack).
    static var discipline: QueueDiscipline { get }
    /// An empty container.
    init()
    /// Enqueue / push.
    func put(_ value: UInt)
    /// Dequeue / pop; `nil` when empty.
    func take() -> UInt?
    /// Waits until the memory the container deferred to a reclamation thread (liburcu's
    /// call_rcu) has been given back, so that it is not reclaimed during another contender's
    /// run. Called by the interleaved runner after each run, untimed; the default does nothing.
    func drain()
}

extension QueueContender {
    /// Nothing deferred to another thread: nothing to wait for.
    package func drain() {}
}

/// What the threads of one benchmark do with the container, per round.
package enum QueueWorkload: Sendable, CaseIterable {
    /// 1 producer, 1 consumer: thread 0 puts every element, thread 1 takes them all.
    case oneProducerOneConsumer
    /// 2 producers, 2 consumers: threads 0–1 put half each, threads 2–3 take half each.
    case twoProducersTwoConsumers
    /// 4 threads, each alternating put and take.
    case fourAlternating

    /// Threads in the team.
    package var threads: Int {
        switch self {
        case .oneProducerOneConsumer: 2
        case .twoProducersTwoConsumers, .fourAlternating: 4
        }
    }

    /// The workload's part of the benchmark name, e.g. "FIFO 1P/1C".
    package func name(_ discipline: QueueDiscipline) -> String {
        switch self {
        case .oneProducerOneConsumer: "\(discipline.rawValue) 1P/1C"
        case .twoProducersTwoConsumers: "\(discipline.rawValue) 2P/2C"
        case .fourAlternating: "\(discipline.rawValue) 4 alternating"
        }
    }

    /// Runs thread `index`'s share of one round that transfers `transfers` elements.
    /// - Returns: the sum of the values this thread took, for `blackHole` (and so that no
    ///   take can be optimized away).
    @inlinable @inline(__always)
    package func run<Queue: QueueContender>(on queue: Queue, thread index: Int, transfers: Int) -> UInt {
        switch self {
        case .oneProducerOneConsumer:
            if index == 0 {
                for value in 1...UInt(transfers) { queue.put(value) }
                return 0
            }
            return Self.takeAll(from: queue, count: transfers)
        case .twoProducersTwoConsumers:
            let share = transfers / 2
            if index < 2 {
                let base = UInt(index * share)
                for value in 1...UInt(share) { queue.put(base + value) }
                return 0
            }
            return Self.takeAll(from: queue, count: share)
        case .fourAlternating:
            let share = transfers / 4
            let base = UInt(index * share)
            var sum: UInt = 0
            for value in 1...UInt(share) {
                queue.put(base + value)
                // In a linearizable container this take always succeeds (every thread has
                // put at least as many elements as it has taken); loop anyway.
                sum &+= Self.takeAll(from: queue, count: 1)
            }
            return sum
        }
    }

    /// Takes `count` elements, waiting for producers when the container is empty: spinning
    /// briefly, then yielding the processor every 64 failed attempts (the same policy for
    /// every contender, outside any contender's code).
    @inlinable @inline(__always)
    package static func takeAll<Queue: QueueContender>(from queue: Queue, count: Int) -> UInt {
        var sum: UInt = 0
        var taken = 0
        var failures = 0
        while taken < count {
            if let value = queue.take() {
                sum &+= value
                taken += 1
            } else {
                failures += 1
                if failures & 63 == 0 { sched_yield() }
            }
        }
        return sum
    }
}
