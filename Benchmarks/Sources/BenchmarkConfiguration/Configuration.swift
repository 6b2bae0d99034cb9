// The configuration every benchmark family shares, with each family's own bounds: one place for
// the metrics and units that ratios.py reads (wall clock and process CPU time per operation: the
// scaling factor is the operations per iteration).
//
// CPU time: every benchmark measures through `Benchmark.measure(_:)` (async: `measureAsync(_:)`),
// which reads the process's CPU time (BenchmarkSupport/ProcessCPUTime.swift) around the
// wall-clock window and records the difference as the custom metric `processCPU` (nanoseconds
// per iteration, scaled like the wall clock). ratios.py prints it beside the wall time.

import Benchmark
import BenchmarkSupport

extension Benchmark.Configuration {
    /// A family's configuration: `metrics` (wall clock, throughput and process CPU time unless
    /// stated), the wall
    /// clock in `timeUnits` per `scalingFactor` operations, and the family's warm-up and bounds.
    /// - Parameters:
    ///   - warmupIterations: iterations run before measuring.
    ///   - maxDuration: how long a benchmark may measure.
    ///   - maxIterations: how many iterations it may measure.
    ///   - timeUnits: the unit of the reported times.
    ///   - scalingFactor: operations per iteration.
    ///   - metrics: what is measured.
    /// - Returns: The configuration.
    public static func interlock(
        warmupIterations: Int, maxDuration: Duration, maxIterations: Int,
        timeUnits: BenchmarkTimeUnits = .nanoseconds, scalingFactor: BenchmarkScalingFactor = .kilo,
        metrics: [BenchmarkMetric] = [.wallClock, .throughput, .processCPU]
    ) -> Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: metrics, timeUnits: timeUnits, warmupIterations: warmupIterations, scalingFactor: scalingFactor,
            maxDuration: maxDuration, maxIterations: maxIterations)
    }
}

extension BenchmarkMetric {
    /// The process's CPU time per iteration (every thread, user and system), in nanoseconds,
    /// scaled like the wall clock: recorded by `Benchmark.measure(_:)`.
    public static var processCPU: BenchmarkMetric {
        .custom("processCPU", polarity: .prefersSmaller, useScalingFactor: true)
    }
}

extension Benchmark {
    /// Measures `body`: its wall clock (between `startMeasurement()` and `stopMeasurement()`)
    /// and the process's CPU time meanwhile (the ``BenchmarkMetric/processCPU`` metric).
    /// - Parameter body: the measured work.
    /// - Returns: what `body` returns.
    public func measure<T>(_ body: () throws -> T) rethrows -> T {
        let cpu = processCPUNanoseconds()
        startMeasurement()
        let result = try body()
        stopMeasurement()
        measurement(.processCPU, processCPUNanoseconds() - cpu)
        return result
    }

    /// Measures `body` as ``measure(_:)`` does, for async work.
    /// - Parameter body: the measured work.
    /// - Returns: what `body` returns.
    public func measureAsync<T>(_ body: () async throws -> T) async rethrows -> T {
        let cpu = processCPUNanoseconds()
        startMeasurement()
        let result = try await body()
        stopMeasurement()
        measurement(.processCPU, processCPUNanoseconds() - cpu)
        return result
    }
}

/// Registers `name`: a team of `threads` threads (BenchmarkSupport's ThreadTeam) runs `work(index)`
/// once per measured iteration, after the untimed steady-state gate; `check` gets the number of
/// rounds completed at teardown (the family's correctness check).
public func registerTeamBenchmark(
    _ name: String, threads: Int, configuration: Benchmark.Configuration,
    work: @escaping @Sendable (Int) -> Void, check: @escaping @Sendable (Int) -> Void = { _ in }
) {
    let team = ThreadTeam(threads: threads, work: work)
    Benchmark(
        name,
        configuration: configuration,
        closure: { benchmark in
            // Untimed: BenchmarkSupport/Interconnect.swift, CoreState.swift.
            team.awaitSteadyState(naming: benchmark.name)
            benchmark.measure { team.round() }
        },
        setup: { team.start() },
        teardown: {
            team.stop()
            check(team.completedRounds)
        }
    )
}
