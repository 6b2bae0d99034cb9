// The configuration every benchmark family shares, with each family's own bounds: one place for
// the metrics and units that ratios.py reads (wall clock per operation: the scaling factor is the
// operations per iteration).

import Benchmark

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
