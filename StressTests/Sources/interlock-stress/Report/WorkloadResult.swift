// The outcome of one workload: the figures of the table and of the JSON report.

/// Latency percentiles of the sampled operations, in nanoseconds: each within 0.1% of the
/// recorded value of its rank (see ``LatencyHistogram``); `samples` and `max` are exact.
struct LatencySummary: Codable, Sendable {
    /// How many operations were timed.
    let samples: UInt64
    let p50: UInt64
    let p99: UInt64
    let p999: UInt64
    let max: UInt64

    init(_ histogram: LatencyHistogram) {
        samples = histogram.totalCount
        p50 = histogram.totalCount == 0 ? 0 : histogram.valueAtPercentile(50)
        p99 = histogram.totalCount == 0 ? 0 : histogram.valueAtPercentile(99)
        p999 = histogram.totalCount == 0 ? 0 : histogram.valueAtPercentile(99.9)
        max = histogram.totalCount == 0 ? 0 : histogram.max
    }
}

/// A named figure a workload attached with ``WorkloadContext/note(_:_:)``.
struct ResultNote: Codable, Sendable {
    let name: String
    let value: String
}

/// One row of the report.
struct WorkloadResult: Codable, Sendable {
    let name: String
    let summary: String
    let threads: Int
    /// Operations counted exactly over all threads.
    let operations: Int
    /// Seconds from the start gate opening to the last thread joined.
    let seconds: Double
    let operationsPerSecond: Double
    let latencyNanoseconds: LatencySummary
    let passed: Bool
    /// The first violation messages (at most `WorkloadContext.keptViolations`).
    let violations: [String]
    /// How many violations were reported in all.
    let violationCount: Int
    let notes: [ResultNote]
    /// The resident set while the workload ran (JSON only; nil without procfs or when hung).
    let residentMemory: ResidentSummary?

    init(workload: Workload, context: WorkloadContext) {
        name = workload.name
        summary = workload.summary
        threads = context.threadCount
        operations = context.operations
        seconds = context.elapsed.seconds
        operationsPerSecond = seconds > 0 ? Double(operations) / seconds : 0
        latencyNanoseconds = LatencySummary(context.latencies)
        let (messages, total) = context.violations
        violations = messages
        violationCount = total
        passed = total == 0
        notes = context.notes.map { ResultNote(name: $0.0, value: $0.1) }
        residentMemory = context.residentMemory
    }

    /// The result of a workload that never finished (see `Watchdog`).
    init(hung workload: Workload, threads: Int, seconds: Double, message: String) {
        name = workload.name
        summary = workload.summary
        self.threads = threads
        operations = 0
        self.seconds = seconds
        operationsPerSecond = 0
        latencyNanoseconds = LatencySummary(LatencyHistogram.latencies())
        passed = false
        violations = [message]
        violationCount = 1
        notes = []
        residentMemory = nil
    }
}

/// A selected workload that was not run (see `Workload.skipReason`): it counts as neither
/// passed nor failed.
struct SkippedWorkload: Codable, Sendable {
    let name: String
    let summary: String
    /// One line: what the run lacks and how to give it.
    let reason: String
}
