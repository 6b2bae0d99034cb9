// Progress while workloads run: on a terminal, one live line per workload rewritten in place
// (\r, then erase to the end of the line) with elapsed time, operations and rate; otherwise
// (a log, a pipe) one plain line when a workload starts and one when it ends.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Prints progress for a sequence of workloads. Used from the main thread only.
struct ProgressDisplay {
    /// Whether standard output is a terminal (live line) or not (plain lines).
    let live: Bool
    /// How many workloads run in all.
    let total: Int

    init(total: Int, live: Bool = isatty(STDOUT_FILENO) != 0) {
        self.total = total
        self.live = live
    }

    /// A workload is about to start.
    func started(_ index: Int, _ name: String, threads: Int, seconds: Double) {
        let text = "\(tag(index)) \(name): \(threads) threads for \(formatFixed(seconds, 1)) s"
        if live { emit("\r" + text + "\u{1B}[K") } else { emit(text + "\n") }
    }

    /// Periodic update while the workload's threads run (live mode only).
    func update(_ index: Int, _ name: String, elapsed: Duration, seconds: Double, operations: Int) {
        guard live else { return }
        let elapsedSeconds = elapsed.seconds
        let rate = elapsedSeconds > 0 ? Double(operations) / elapsedSeconds : 0
        emit(
            "\r\(tag(index)) \(name): \(formatFixed(elapsedSeconds, 1))/\(formatFixed(seconds, 1)) s  "
                + "\(formatCount(operations)) ops  \(formatRate(rate))\u{1B}[K")
    }

    /// The workload finished.
    func finished(_ index: Int, _ result: WorkloadResult) {
        let verdict = result.passed ? "PASS" : "FAIL (\(result.violationCount) violation(s))"
        let text =
            "\(tag(index)) \(result.name): \(verdict), \(formatCount(result.operations)) ops in "
            + "\(formatFixed(result.seconds, 2)) s (\(formatRate(result.operationsPerSecond)))"
        emit((live ? "\r" : "") + text + (live ? "\u{1B}[K\n" : "\n"))
    }

    /// The workload is not run (see ``Workload/skipReason``).
    func skipped(_ index: Int, _ skip: SkippedWorkload) {
        emit((live ? "\r" : "") + "\(tag(index)) \(skip.name): SKIPPED: \(skip.reason)" + (live ? "\u{1B}[K\n" : "\n"))
    }

    private func tag(_ index: Int) -> String { "[\(index + 1)/\(total)]" }

    private func emit(_ text: String) {
        print(text, terminator: "")
        fflush(nil)  // all streams: `stdout` itself is not concurrency-safe to name in Swift 6
    }
}
