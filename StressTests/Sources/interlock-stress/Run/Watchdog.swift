// The hang detector. A broken primitive often hangs rather than miscounts (a lost wake-up, a
// lock word left taken), and a hung workload must still end the run with a verdict: CI reads
// the last line. A background thread watches the workload in progress; when it runs past its
// time limit (twice its duration plus a grace period for set-up, checks and slow sanitizer
// builds), the watchdog reports it as FAIL ("hung"), prints the report of everything so far
// and exits the process with status 1. Hung threads cannot be joined or cancelled; exiting is
// the only way to be rid of them.

import Foundation

/// Watches the workload in progress; see the file comment.
final class Watchdog: @unchecked Sendable {
    /// Time allowed beyond twice the workload's duration (hidden option `--watchdog-grace`,
    /// default 30 s).
    let grace: Duration

    private let lock = NSLock()
    // Guarded by `lock`:
    private var current:
        (
            workload: Workload, threads: Int, started: ContinuousClock.Instant,
            limit: ContinuousClock.Instant
        )?
    private var completed: [WorkloadResult] = []
    private var fired = false

    /// Called with the results (the hung workload last) to print the report; returns the status.
    private let report: @Sendable ([WorkloadResult]) -> Int32

    init(grace: Duration, report: @escaping @Sendable ([WorkloadResult]) -> Int32) {
        self.grace = grace
        self.report = report
        // Strong capture: the thread outlives the run loop and lasts until the process exits.
        let thread = Thread { self.watch() }
        thread.name = "interlock-stress watchdog"
        thread.start()
    }

    /// A workload starts; it must finish within `2 × duration + grace`.
    func begin(_ workload: Workload, threads: Int, duration: Duration) {
        let now = ContinuousClock.now
        lock.lock()
        defer { lock.unlock() }
        current = (workload, threads, now, now + duration * 2 + grace)
    }

    /// The workload in progress finished with `result`. Never returns if the watchdog already
    /// declared it hung (the process is exiting).
    func end(_ result: WorkloadResult) {
        lock.lock()
        if fired {
            lock.unlock()
            while true { sleepNanoseconds(1_000_000_000) }
        }
        current = nil
        completed.append(result)
        lock.unlock()
    }

    private func watch() {
        while true {
            sleepNanoseconds(100_000_000)
            lock.lock()
            guard let running = current, ContinuousClock.now > running.limit else {
                lock.unlock()
                continue
            }
            fired = true
            let results = completed
            lock.unlock()
            let waited = ContinuousClock.now - running.started
            let hung = WorkloadResult(
                hung: running.workload, threads: running.threads, seconds: waited.seconds,
                message: "hung: still running \(formatFixed(waited.seconds, 1)) s after it started "
                    + "(deadlock, lost wake-up or a lock left taken?)")
            print("\n\(running.workload.name): did not finish; giving up on it")
            let status = report(results + [hung])
            fflush(nil)
            exit(max(status, 1))
        }
    }
}
