// LatencyHistogram: percentiles against the exact nearest-rank values of the recorded data
// within the stated bound (never below, less than 1/128 above), exact count and maximum, merging
// equal to recording everything into one histogram, and the bucket layout that the bound rests on.

import Testing

@testable import interlock_stress

@Suite("LatencyHistogram")
struct LatencyHistogramTests {
    /// The percentiles the report prints, and more around them.
    static let percentiles: [Double] = [0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100]

    /// Random data of different shapes: every magnitude up to UInt64.max, latency-like (mostly
    /// 50 ns-2 µs with a tail up to a second), and few distinct values (many equal ranks).
    static let shapes: [(name: String, next: @Sendable (inout FastRandom) -> UInt64)] = [
        ("every magnitude", { random in random.next() >> (random.next() % 64) }),
        (
            "latency-like",
            { random in
                random.next() % 64 == 0
                    ? UInt64.random(in: 2_000...1_000_000_000, using: &random)
                    : UInt64.random(in: 50...2_000, using: &random)
            }
        ),
        ("few distinct values", { random in [0, 1, 127, 128, 255, 256, 1_000_003][Int(random.next() % 7)] }),
    ]

    /// The nearest-rank percentile of sorted `values`: the ⌈p/100 · n⌉-th smallest, at least the first.
    static func exactPercentile(_ percentile: Double, of sorted: [UInt64]) -> UInt64 {
        let rank = Int((percentile / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    @Test(
        "percentiles of random data are the exact value or less than 1/128 above it",
        arguments: 0..<3, [1, 7, 1_000, 20_000])
    func percentilesWithinBound(shape: Int, count: Int) {
        var random = FastRandom(seed: UInt64(shape * 1_000_003 + count))
        let values = (0..<count).map { _ in Self.shapes[shape].next(&random) }
        var histogram = LatencyHistogram()
        for value in values { histogram.record(value) }
        let sorted = values.sorted()
        for percentile in Self.percentiles {
            let exact = Self.exactPercentile(percentile, of: sorted)
            let reported = histogram.value(atPercentile: percentile)
            #expect(reported >= exact, "\(Self.shapes[shape].name), p\(percentile): \(reported) < exact \(exact)")
            // reported < exact · (1 + 1/128), in integers: 128 · (reported - exact) < exact.
            #expect(
                reported == exact || (reported > exact && 128 * (reported - exact) < exact),
                "\(Self.shapes[shape].name), p\(percentile): \(reported) vs exact \(exact)")
        }
    }

    @Test("count and max are exact; p100 is the max", arguments: 0..<3)
    func countAndMaxExact(shape: Int) {
        var random = FastRandom(seed: UInt64(shape) + 99)
        var histogram = LatencyHistogram()
        var values: [UInt64] = []
        for _ in 0..<5_000 {
            let value = Self.shapes[shape].next(&random)
            values.append(value)
            histogram.record(value)
        }
        #expect(histogram.count == 5_000)
        #expect(histogram.max == values.max())
        #expect(histogram.value(atPercentile: 100) == values.max())
    }

    @Test("a maximum in the middle of a wide bucket is reported as it is, not as the bucket's top")
    func maxInsideBucket() {
        var histogram = LatencyHistogram()
        histogram.record(1_000_003)  // bucket [999_424, 1_003_520)
        histogram.record(17)
        #expect(histogram.max == 1_000_003)
        #expect(histogram.value(atPercentile: 99.9) == 1_000_003)
        #expect(histogram.value(atPercentile: 50) == 17)
    }

    @Test("merging per-thread histograms equals recording every value into one", arguments: 0..<3)
    func mergeEqualsRecordingAll(shape: Int) {
        var random = FastRandom(seed: UInt64(shape) + 7)
        var all = LatencyHistogram()
        // Four "threads" of different sizes, one of them empty, as the harness merges them.
        var parts = [LatencyHistogram](repeating: LatencyHistogram(), count: 4)
        for (part, size) in zip(parts.indices, [3_000, 0, 17, 9_000]) {
            for _ in 0..<size {
                let value = Self.shapes[shape].next(&random)
                parts[part].record(value)
                all.record(value)
            }
        }
        var merged = LatencyHistogram()
        for part in parts.reversed() { merged.merge(part) }
        #expect(merged == all)
        #expect(merged.count == 12_017)
        for percentile in Self.percentiles {
            #expect(merged.value(atPercentile: percentile) == all.value(atPercentile: percentile))
        }
    }

    @Test("an empty histogram reports zero for everything")
    func empty() {
        let histogram = LatencyHistogram()
        #expect(histogram.count == 0)
        #expect(histogram.max == 0)
        for percentile in Self.percentiles { #expect(histogram.value(atPercentile: percentile) == 0) }
        #expect(LatencySummary(histogram).samples == 0)
    }

    @Test("buckets tile the values: each value is in its bucket, buckets are contiguous and at most 1/128 wide")
    func bucketLayout() {
        var random = FastRandom(seed: 5)
        let edges: [UInt64] = [
            0, 1, 126, 127, 128, 129, 255, 256, 257, 511, 512, 1 << 40, (1 << 40) - 1,
            UInt64.max - 1, UInt64.max,
        ]
        let values = edges + (0..<20_000).map { _ in random.next() >> (random.next() % 64) }
        for value in values {
            let index = LatencyHistogram.bucketIndex(of: value)
            let highest = LatencyHistogram.highestValue(inBucket: index)
            let lowest = index == 0 ? 0 : LatencyHistogram.highestValue(inBucket: index - 1) + 1
            #expect(lowest <= value && value <= highest, "\(value) outside bucket \(index): \(lowest)...\(highest)")
            #expect(
                lowest < 256 ? highest == lowest : 128 * (highest - lowest) < lowest,
                "bucket \(index) of \(value) too wide: \(lowest)...\(highest)")
        }
        #expect(LatencyHistogram.bucketIndex(of: UInt64.max) == 57 * 128 + 127)
        #expect(LatencyHistogram.highestValue(inBucket: 57 * 128 + 127) == UInt64.max)
    }
}
