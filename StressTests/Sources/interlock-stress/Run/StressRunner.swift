// Runs the selected workloads one after the other, then reports: the table on stdout, the
// JSON file when asked, and the exit status (0 when every workload passed, 1 otherwise).
// A workload whose `skipReason` names something this run lacks (`postgres-lock` without
// `--postgres`) is not run: it gets a SKIPPED line and counts as neither passed nor failed.

import Foundation

/// The run's configuration, from the command line.
struct RunConfiguration: Sendable {
    let threads: Int
    let seconds: Double
    /// `--operations`: stop each workload at this many operations (or at `seconds`).
    let operations: Int?
    /// `--directory`, or `nil` for a fresh temporary directory.
    let directory: String?
    let jsonPath: String?
    let only: [String]
    /// `--postgres`: the PostgreSQL server's connection string, or `nil` (its workloads skip).
    var postgres: String? = nil
    /// Time a workload may take beyond twice its duration before the watchdog fails it.
    let watchdogGrace: Duration
}

/// Runs workloads and reports on them.
struct StressRunner {
    let configuration: RunConfiguration
    let workloads: [Workload]

    /// Runs every workload; returns the process exit status.
    func run() -> Int32 {
        let startedAt = ISO8601DateFormatter().string(from: Date())
        let timerOverhead = measureTimerOverhead()
        let base: String
        let ownsBase: Bool
        if let given = configuration.directory {
            base = given
            ownsBase = false
        } else {
            do {
                base = try makeTemporaryDirectory()
            } catch {
                FileHandle.standardError.write(Data("interlock-stress: \(error)\n".utf8))
                return 1
            }
            ownsBase = true
        }
        defer { if ownsBase { try? FileManager.default.removeItem(atPath: base) } }

        let configuration = self.configuration, names = workloads.map(\.name)
        // Decided from the configuration alone, before anything runs.
        let skipped = workloads.compactMap { workload in
            workload.skipReason(configuration).map {
                SkippedWorkload(name: workload.name, summary: workload.summary, reason: $0)
            }
        }
        let report: @Sendable ([WorkloadResult]) -> Int32 = { results in
            Self.report(
                results, skipped: skipped, configuration: configuration, workloads: names, directory: base,
                startedAt: startedAt, timerOverhead: timerOverhead)
        }
        // The watchdog exits the process when a workload hangs: it cleans up on its way out.
        let watchdog = Watchdog(grace: configuration.watchdogGrace) { results in
            let status = report(results)
            if ownsBase { try? FileManager.default.removeItem(atPath: base) }
            return status
        }
        let display = ProgressDisplay(total: workloads.count)
        var results: [WorkloadResult] = []
        for (index, workload) in workloads.enumerated() {
            if let skip = skipped.first(where: { $0.name == workload.name }) {
                display.skipped(index, skip)
                continue
            }
            display.started(index, workload.name, threads: configuration.threads, seconds: configuration.seconds)
            let duration = Duration.nanoseconds(Int64((configuration.seconds * 1e9).rounded()))
            let context = WorkloadContext(
                workloadName: workload.name, threadCount: configuration.threads, duration: duration,
                latencySampleInterval: workload.latencySampleInterval,
                targetOperations: configuration.operations, postgresConnectionString: configuration.postgres,
                baseDirectory: base,
                onProgress: { [seconds = configuration.seconds] elapsed, operations in
                    display.update(index, workload.name, elapsed: elapsed, seconds: seconds, operations: operations)
                })
            watchdog.begin(workload, threads: configuration.threads, duration: duration)
            do {
                try workload.run(context)
            } catch {
                context.fail("the workload threw: \(error)")
            }
            context.removeDirectory()
            let result = WorkloadResult(workload: workload, context: context)
            watchdog.end(result)
            display.finished(index, result)
            results.append(result)
        }
        return report(results)
    }

    /// Prints the table and the summary line, writes the JSON file when asked; returns the
    /// exit status (0 when every workload passed and the JSON, if any, was written).
    private static func report(
        _ results: [WorkloadResult], skipped: [SkippedWorkload], configuration: RunConfiguration,
        workloads: [String],
        directory: String, startedAt: String, timerOverhead: UInt64
    ) -> Int32 {
        print("")
        print("Latency: sampled operations, clock overhead (\(timerOverhead) ns) included.")
        print(ReportTable.render(results, skipped: skipped))
        let failed = results.filter { !$0.passed }.count
        if let path = configuration.jsonPath {
            let report = JSONReport(
                configuration: .init(
                    threads: configuration.threads, secondsPerWorkload: configuration.seconds,
                    operationsPerWorkload: configuration.operations,
                    workloads: workloads, directory: directory,
                    activeProcessors: ProcessInfo.processInfo.activeProcessorCount, startedAt: startedAt,
                    timerOverheadNanoseconds: timerOverhead),
                results: results, skipped: skipped, passed: results.count - failed, failed: failed)
            do {
                try report.write(to: path)
            } catch {
                FileHandle.standardError.write(Data("interlock-stress: \(error)\n".utf8))
                return 1
            }
        }
        return failed == 0 ? 0 : 1
    }

    /// Creates `$TMPDIR/interlock-stress.XXXXXX`. - Throws: the path and the OS reason.
    private func makeTemporaryDirectory() throws -> String {
        let template = (NSTemporaryDirectory() as NSString).appendingPathComponent("interlock-stress.XXXXXX")
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else {
            throw HarnessError(
                description: "cannot create a temporary directory \(template): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}
