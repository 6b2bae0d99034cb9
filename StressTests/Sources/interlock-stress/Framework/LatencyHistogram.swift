// The latency histogram each worker thread records into and the report reads percentiles from:
// HdrHistogram (hdrhistogram-swift), auto-resizing, three significant digits (a percentile is
// within 0.1% of the recorded value of its rank; the count and the maximum are exact). Each
// worker records into its own; the coordinator adds them after joining the workers.

import Histogram

/// Counts of nanosecond latencies (see the file comment).
typealias LatencyHistogram = Histogram<UInt64>

extension Histogram<UInt64> {
    /// An empty histogram of nanosecond latencies.
    static func latencies() -> Histogram<UInt64> { Histogram(numberOfSignificantValueDigits: .three) }
}
