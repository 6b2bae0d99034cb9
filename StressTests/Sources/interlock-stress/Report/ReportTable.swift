// The table printed at the end of a run: one row per workload, then the details of failures
// and the workloads' notes, then one line per skipped workload (not in the table, not counted),
// then the summary line CI reads (`stress: N passed, M failed`).

/// Renders results as the end-of-run table.
enum ReportTable {
    /// The table, the details under it and the final summary line.
    static func render(_ results: [WorkloadResult], skipped: [SkippedWorkload] = []) -> String {
        let header = ["workload", "threads", "operations", "ops/s", "p50", "p99", "p99.9", "max", "result"]
        let rows = results.map { result -> [String] in
            let latency = result.latencyNanoseconds
            let sampled = latency.samples > 0
            let verdict =
                result.passed
                ? "PASS"
                : "FAIL: " + (result.violations.first ?? "")
                    + (result.violationCount > 1
                        ? " (+\(result.violationCount - 1) more)" : "")
            return [
                result.name, String(result.threads), formatCount(result.operations),
                formatRate(result.operationsPerSecond),
                formatLatency(latency.p50, hasSamples: sampled), formatLatency(latency.p99, hasSamples: sampled),
                formatLatency(latency.p999, hasSamples: sampled), formatLatency(latency.max, hasSamples: sampled),
                verdict,
            ]
        }
        // The last column (the verdict) is not padded: it may be long.
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < header.count - 1 {
                widths[column] = max(widths[column], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : pad(cell, widths[column], right: column > 0)
            }.joined(separator: "  ")
        }
        var out = [
            line(header), String(repeating: "-", count: widths.dropLast().reduce(0, +) + 2 * (widths.count - 1) + 6),
        ]
        out += rows.map(line)

        for result in results where !result.passed || !result.notes.isEmpty {
            out.append("")
            out.append("\(result.name): \(result.passed ? "PASS" : "FAIL, \(result.violationCount) violation(s)")")
            for message in result.violations { out.append("  violated: \(message)") }
            if result.violationCount > result.violations.count {
                out.append("  ... and \(result.violationCount - result.violations.count) more")
            }
            for note in result.notes { out.append("  \(note.name): \(note.value)") }
        }
        if !skipped.isEmpty { out.append("") }
        for skip in skipped { out.append("\(skip.name): SKIPPED (not counted): \(skip.reason)") }
        let failed = results.filter { !$0.passed }.count
        out.append("")
        out.append("stress: \(results.count - failed) passed, \(failed) failed")
        return out.joined(separator: "\n")
    }
}
