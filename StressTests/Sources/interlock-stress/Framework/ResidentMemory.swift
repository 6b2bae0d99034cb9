// The process's resident set, for the soak runs: sampled by the coordinator while a workload
// runs, so that a queue or table that keeps growing shows in the report.

import Foundation

/// Reads the resident set size of this process.
enum ResidentMemory {
    /// Bytes resident now (`/proc/self/statm`, field 2, in pages), or nil where there is no
    /// procfs.
    static func bytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// The resident set over one workload's run, in MiB: after the first second (the warm-up:
/// thread stacks, histograms, caches filled), the largest sample, and after the join.
struct ResidentSummary: Codable, Sendable, Equatable {
    let afterWarmupMiB: Double
    let maxMiB: Double
    let endMiB: Double
}

/// Collects the samples of ``ResidentSummary`` (coordinator thread only).
struct ResidentSampler {
    private var warm: Int?
    private var largest = 0
    private var last = 0

    /// Takes a sample; `elapsed` is the time since the workers started.
    mutating func sample(elapsed: Duration) {
        guard let now = ResidentMemory.bytes() else { return }
        if warm == nil && elapsed >= .seconds(1) { warm = now }
        largest = Swift.max(largest, now)
        last = now
    }

    /// The summary, or nil when nothing was sampled (no procfs).
    var summary: ResidentSummary? {
        guard last > 0 else { return nil }
        let mebibyte = Double(1 << 20)
        return ResidentSummary(
            afterWarmupMiB: Double(warm ?? last) / mebibyte, maxMiB: Double(largest) / mebibyte,
            endMiB: Double(last) / mebibyte)
    }
}
