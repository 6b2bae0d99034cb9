// The contract every contender of the atomics benchmarks meets, and the four workloads.
//
// A contender is one Int64 word at a stable heap address, reached through one class instance
// that the benchmark creates once, at registration, and holds in a `let` for the whole run:
// the measured loop neither allocates nor retains/releases, and every contender pays the same
// single indirection (an object pointer in a register, the word at a fixed offset from it).
//
// Every operation is sequentially consistent (OSAtomic's "Barrier" form and the default of
// every library measured), except the first read of a compare-and-swap loop, which is relaxed
// in every contender because the compare-and-swap validates it.
//
// The workloads are generic over the contender and `@inline(__always)`, so each benchmark's
// closure holds one specialized loop per contender: no protocol witness call, no existential.
// Look at the assembly (README.md, "Checking fairness") when a contender looks too fast or slow.

import Benchmark

/// One atomic Int64 of one library, operated on with the orderings stated above.
protocol AtomicCounter: AnyObject, Sendable {
    /// The contender's name in benchmark names: `<Workload> / <threads> / <contenderName>`.
    static var contenderName: String { get }
    /// Adds one, sequentially consistent; the result is not used.
    func benchIncrement()
    /// Reads the value without ordering (the first read of a compare-and-swap loop).
    func benchLoadRelaxed() -> Int64
    /// Reads the value, sequentially consistent.
    func benchLoad() -> Int64
    /// Writes the value, sequentially consistent.
    func benchStore(_ value: Int64)
    /// Strong compare-and-swap, sequentially consistent on success and on failure.
    func benchCompareExchange(expected: Int64, desired: Int64) -> (exchanged: Bool, original: Int64)
}

/// What one benchmark does to the counter, `operations` times per thread and round.
enum AtomicWorkload: CaseIterable, Sendable {
    /// `increment()`: one atomic add (x86-64: `lock add`/`lock xadd`).
    case increment
    /// Read, then compare-and-swap value + 1 until it succeeds: how an operation the hardware
    /// lacks is built (x86-64: `mov` + `lock cmpxchg`, retried under contention).
    case compareExchangeLoop
    /// A sequentially consistent load, summed so it cannot be dropped (x86-64: `mov`).
    case load
    /// A sequentially consistent store of the loop index (x86-64: `xchg`).
    case store

    /// Operations per measured iteration, over all threads. A thousand operations of 5–50 ns
    /// make iterations long enough for the clock and short enough to dodge preemption; a
    /// load costs a fraction of a nanosecond, so it needs a million.
    var scalingFactor: BenchmarkScalingFactor {
        self == .load ? .mega : .kilo
    }

    /// The workload's part of the benchmark name.
    var name: String {
        switch self {
        case .increment: "Atomic increment"
        case .compareExchangeLoop: "Atomic CAS-loop increment"
        case .load: "Atomic load"
        case .store: "Atomic store"
        }
    }

    /// Checks, after a benchmark, that the counter shows every operation it timed: the
    /// increments add up exactly (none lost, none optimized away); loads and stores leave
    /// nothing to count.
    /// - Warning: A mismatch traps, naming the contender and both counts.
    func verify<Counter: AtomicCounter>(_ counter: Counter, operations: Int) {
        guard self == .increment || self == .compareExchangeLoop else { return }
        let total = counter.benchLoad()
        precondition(
            total == Int64(operations),
            "AtomicsBenchmarks: \(name) on \(Counter.contenderName) counted \(total), expected \(operations)")
    }

    /// Runs `operations` operations of this workload on `counter`.
    /// - Returns: a value that depends on every load, for `blackHole`.
    @inline(__always)
    func run<Counter: AtomicCounter>(on counter: Counter, operations: Int) -> Int64 {
        switch self {
        case .increment:
            for _ in 0..<operations {
                counter.benchIncrement()
            }
            return 0
        case .compareExchangeLoop:
            for _ in 0..<operations {
                var expected = counter.benchLoadRelaxed()
                while true {
                    let (exchanged, found) = counter.benchCompareExchange(expected: expected, desired: expected &+ 1)
                    if exchanged { break }
                    expected = found
                }
            }
            return 0
        case .load:
            var sum: Int64 = 0
            for _ in 0..<operations {
                sum &+= counter.benchLoad()
            }
            return sum
        case .store:
            for index in 0..<operations {
                counter.benchStore(Int64(truncatingIfNeeded: index))
            }
            return 0
        }
    }
}
