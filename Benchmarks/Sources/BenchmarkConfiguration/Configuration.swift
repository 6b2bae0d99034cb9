// The configuration every benchmark family shares, with each family's own bounds: one place for
// the metrics and units that ratios.py reads (wall clock per operation: the scaling factor is the
// operations per iteration).

import Benchmark
import BenchmarkSupport

extension Benchmark.Configuration {
    /// A family's configuration: `metrics` (wall clock and throughput unless stated), the wall
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
        metrics: [BenchmarkMetric] = [.wallClock, .throughput]
    ) -> Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: metrics, timeUnits: timeUnits, warmupIterations: warmupIterations, scalingFactor: scalingFactor,
            maxDuration: maxDuration, maxIterations: maxIterations)
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
            benchmark.startMeasurement()
            team.round()
            benchmark.stopMeasurement()
        },
        setup: { team.start() },
        teardown: {
            team.stop()
            check(team.completedRounds)
        }
    )
}
