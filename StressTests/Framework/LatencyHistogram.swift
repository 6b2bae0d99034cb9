// The latency histogram each worker thread records into and the report reads percentiles from:
// a log-linear histogram of nanosecond values, after HdrHistogram (Gil Tene,
// http://hdrhistogram.org) — our own code, reduced to what the harness asks of it.
//
// Layout. Values below 2^k (k = `subBucketBits`, 7) have a bucket each. Above that, every power
// of two [2^e, 2^(e+1)) is split into 2^k buckets of equal width 2^(e-k), so a bucket is never
// wider than 1/2^k of the smallest value it holds. For a value v >= 2^k, with e = ⌊log2 v⌋ and
// shift = e - k:
//
//   index  = (shift + 1) · 2^k + ((v >> shift) - 2^k)      the top k+1 bits of v, after the octave
//   bucket = [lowest, lowest + 2^shift),  lowest = (v >> shift) << shift
//
// Below 2^(k+1) the formula gives index = v (shift 0), so the exact buckets run on without a seam.
// Every UInt64 has a bucket: UInt64.max lands in index 57 · 2^7 + 127 = 7,423. The counts array
// grows to the highest index recorded, so a thread whose samples stay under 1 ms holds about
// 1,800 counters (14 KB).
//
// Error bound. A percentile is the highest value of the bucket holding the requested rank,
// capped at the exact maximum. With x the exact value of that rank (the nearest-rank percentile
// of the recorded values), x <= reported < x · (1 + 2^-k): never below, and less than 1/128
// (0.79%) above. The count and the maximum are exact.
//
// Merging adds the counts bucket by bucket, so a merged histogram is the histogram of all the
// values recorded into its parts: the harness merges every worker's after joining them.

/// Counts of nanosecond values in log-linear buckets, with the exact count and maximum.
struct LatencyHistogram: CustomStringConvertible, Equatable, Sendable {
    /// k: each power of two is split into 2^k buckets (relative bucket width at most 2^-k).
    static let subBucketBits = 7
    private static let subBucketCount = 1 << subBucketBits

    /// How many values were recorded.
    private(set) var count: UInt64 = 0
    /// The largest value recorded, exactly (0 when none was).
    private(set) var max: UInt64 = 0
    private var counts: [UInt64] = []

    /// Records one value.
    @inline(__always)
    mutating func record(_ value: UInt64) {
        let index = Self.bucketIndex(of: value)
        if index >= counts.count { grow(toHold: index) }
        counts[index] &+= 1
        count &+= 1
        if value > max { max = value }
    }

    /// Adds every value recorded into `other`, as if they had been recorded here.
    mutating func merge(_ other: LatencyHistogram) {
        if other.counts.count > counts.count { grow(toHold: other.counts.count - 1) }
        for (index, n) in other.counts.enumerated() where n != 0 { counts[index] &+= n }
        count &+= other.count
        max = Swift.max(max, other.max)
    }

    /// The nearest-rank `percentile` (0-100) of the recorded values within the relative error
    /// above: the highest value of the bucket holding the ⌈percentile/100 · count⌉-th smallest
    /// value (at least the first), capped at ``max``. 0 when nothing was recorded.
    func value(atPercentile percentile: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = Self.rank(ofPercentile: percentile, count: count)
        var seen: UInt64 = 0
        for (index, n) in counts.enumerated() {
            seen += n
            if seen >= rank { return Swift.min(Self.highestValue(inBucket: index), max) }
        }
        return max
    }

    /// The 1-based rank of the nearest-rank `percentile` among `count` values:
    /// ⌈percentile/100 · count⌉, clamped to 1...count.
    static func rank(ofPercentile percentile: Double, count: UInt64) -> UInt64 {
        let clamped = Swift.min(Swift.max(percentile, 0), 100)
        let rank = UInt64((clamped / 100 * Double(count)).rounded(.up))
        return Swift.min(Swift.max(rank, 1), count)
    }

    /// The bucket of `value` (see the layout at the top of the file).
    @inline(__always)
    static func bucketIndex(of value: UInt64) -> Int {
        let octave = UInt64.bitWidth - 1 - value.leadingZeroBitCount  // ⌊log2 value⌋; -1 for 0
        let shift = Swift.max(octave - subBucketBits, 0)
        return (shift << subBucketBits) + Int(truncatingIfNeeded: value >> shift)
    }

    /// The largest value that falls in bucket `index`.
    static func highestValue(inBucket index: Int) -> UInt64 {
        let shift = Swift.max((index >> subBucketBits) - 1, 0)
        let top = UInt64(index - (shift << subBucketBits))  // the value's top bits, v >> shift
        return (top << shift) + ((1 << shift) - 1)
    }

    /// The count and the maximum (a test's failure message, not the thousands of counters).
    var description: String { "LatencyHistogram(count: \(count), max: \(max), buckets: \(counts.count))" }

    private mutating func grow(toHold index: Int) {
        counts.append(contentsOf: repeatElement(0, count: index + 1 - counts.count))
    }
}
