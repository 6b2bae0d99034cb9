// The harness side of one workload run: configuration in, threads, measurements and
// violations out. A workload sees only this object and the `StressWorker` of each thread.
//
// Threading: `runThreads` is called on the main thread, which becomes the coordinator while
// the workers run (progress, deadline, stop flag, join). `fail`, `check`, `note` and
// `directory` may be called from any thread; they take `lock`.

import Foundation
import Interlock

/// What a workload receives: the run's configuration, the means to load the primitive from
/// many threads, and the means to report what it found. See ``Workload``.
final class WorkloadContext: @unchecked Sendable {
    /// The workload's name.
    let workloadName: String
    /// How many worker threads ``runThreads(_:)`` starts (`--threads`).
    let threadCount: Int
    /// How long the workers run (`--seconds`).
    let duration: Duration
    /// Latency sampling period, from ``Workload/latencySampleInterval``.
    let latencySampleInterval: Int
    /// `--operations`: the workers stop once they have done this many operations in all, or at
    /// the end of ``duration``, whichever comes first (nil: at the end of ``duration``).
    let targetOperations: Int?
    /// `--postgres`: the connection string of the PostgreSQL server for the workloads that need
    /// one (nil when not given; those workloads are skipped, see ``Workload/skipReason``).
    let postgresConnectionString: String?

    private let baseDirectory: String
    private let onProgress: (_ elapsed: Duration, _ operations: Int) -> Void
    private let stopFlag = AtomicBool(false)
    private let childOrdinal = AtomicInt(0)
    private let lock = NSLock()
    // Guarded by `lock`:
    private var violationMessages: [String] = []
    private var violationTotal = 0
    private var noteList: [(String, String)] = []
    private var directoryCreated = false
    // Written by the coordinator (main thread) only:
    private(set) var operations = 0
    private(set) var latencies = LatencyHistogram.latencies()
    private(set) var elapsed: Duration = .zero
    /// The resident set while the workers ran (nil without procfs).
    private(set) var residentMemory: ResidentSummary?
    private var threadsRan = false

    /// At most this many violation messages are kept (the rest are counted).
    static let keptViolations = 20

    init(
        workloadName: String, threadCount: Int, duration: Duration, latencySampleInterval: Int,
        targetOperations: Int? = nil, postgresConnectionString: String? = nil, baseDirectory: String,
        onProgress: @escaping (Duration, Int) -> Void
    ) {
        self.workloadName = workloadName
        self.threadCount = threadCount
        self.duration = duration
        self.latencySampleInterval = latencySampleInterval
        self.targetOperations = targetOperations
        self.postgresConnectionString = postgresConnectionString
        self.baseDirectory = baseDirectory
        self.onProgress = onProgress
    }

    // MARK: Running

    /// Starts ``threadCount`` OS threads, lets them all go at once, runs `body` on each until
    /// the deadline, joins them and returns what each returned, in thread-index order.
    ///
    /// `body` loops `while worker.keepRunning { worker.operation { ... } }`. Call this once per
    /// workload. The operations and latencies of every worker become the workload's figures.
    func runThreads<T: Sendable>(_ body: @escaping @Sendable (StressWorker) -> T) -> [T] {
        precondition(!threadsRan, "WorkloadContext.runThreads: workload \(workloadName) called it twice")
        threadsRan = true
        let gate = StartGate()
        let slots = (0..<threadCount).map { _ in WorkerSlot<T>() }
        let counters = (0..<threadCount).map { _ in AtomicInt(0) }
        var group = ThreadGroup()
        for index in 0..<threadCount {
            let slot = slots[index], counter = counters[index]
            let (count, interval, stop) = (threadCount, latencySampleInterval, stopFlag)
            group.start {
                let deadline = gate.arriveAndWait()
                let worker = StressWorker(
                    index: index, threadCount: count, deadline: deadline, sampleInterval: interval,
                    stopFlag: stop, progress: counter)
                let result = body(worker)
                worker.publish()
                // Read by the coordinator after pthread_join, which orders these writes.
                slot.result = result
                slot.operations = worker.operations
                slot.latencies = worker.latencies
            }
        }
        let clock = ContinuousClock()
        var start = clock.now
        gate.open(after: threadCount) {
            start = clock.now
            return start + duration
        }
        let deadline = start + duration
        var memory = ResidentSampler()
        while case let now = clock.now, now < deadline {
            let left = deadline - now
            sleepNanoseconds(UInt64(min(left, .milliseconds(200)).nanoseconds))
            // Relaxed: a progress display and the --operations target; exactness comes after
            // the join (the workers may overshoot the target by what they do in 200 ms).
            let done = counters.reduce(0) { $0 + $1.load(ordering: .relaxed) }
            onProgress(clock.now - start, done)
            memory.sample(elapsed: clock.now - start)
            if let targetOperations, done >= targetOperations { break }
        }
        // Relaxed: the flag carries no data (see StressWorker.keepRunning); join orders the rest.
        stopFlag.store(true, ordering: .relaxed)
        group.join()
        elapsed = clock.now - start
        memory.sample(elapsed: elapsed)
        residentMemory = memory.summary
        for slot in slots {
            operations += slot.operations
            if let sample = slot.latencies { latencies.add(sample) }
        }
        return slots.map { $0.result! }
    }

    /// `true` once the workers were told to stop (the deadline passed).
    var isStopped: Bool {
        // Relaxed: see StressWorker.keepRunning.
        stopFlag.load(ordering: .relaxed)
    }

    // MARK: Reporting

    /// Records a violated invariant; the workload fails. Any thread may call it.
    func fail(_ message: String) {
        lock.lock()
        defer { lock.unlock() }
        violationTotal += 1
        if violationMessages.count < Self.keptViolations { violationMessages.append(message) }
    }

    /// Records a violation with `message` unless `condition` holds.
    func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fail(message()) }
    }

    /// Attaches a named figure to the result (shown under the table and in the JSON), such as
    /// how many CAS attempts failed. Any thread may call it.
    func note(_ key: String, _ value: CustomStringConvertible) {
        lock.lock()
        defer { lock.unlock() }
        noteList.append((key, value.description))
    }

    /// The violations reported so far (at most ``keptViolations`` messages) and their total.
    var violations: (messages: [String], total: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (violationMessages, violationTotal)
    }

    /// The notes attached so far, in order.
    var notes: [(String, String)] {
        lock.lock()
        defer { lock.unlock() }
        return noteList
    }

    // MARK: Files and processes

    /// A directory for this workload's files (`<--directory>/<workload name>`), created on
    /// first use and removed with its contents after the workload. Any thread may use it.
    /// - Throws: ``HarnessError`` naming the path and the reason when it cannot be created.
    var directory: String {
        get throws {
            let path = (baseDirectory as NSString).appendingPathComponent(workloadName)
            lock.lock()
            defer { lock.unlock() }
            if !directoryCreated {
                do {
                    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                } catch {
                    throw HarnessError(
                        description: "cannot create the scratch directory \(path): \(error.localizedDescription)")
                }
                directoryCreated = true
            }
            return path
        }
    }

    /// Removes ``directory`` when it was created. Called by the runner.
    func removeDirectory() {
        guard directoryCreated else { return }
        try? FileManager.default.removeItem(atPath: (baseDirectory as NSString).appendingPathComponent(workloadName))
    }

    /// Starts the harness again as a child process running this workload's ``Workload/child``
    /// entry, with ``directory``, the thread count and the duration of this run, and
    /// `arguments` (which the child finds in ``ChildInvocation/arguments``).
    /// - Throws: ``HarnessError`` when the process cannot be started.
    func spawnChild(arguments: [String] = []) throws -> ChildProcess {
        var all = [
            "--child", workloadName, "--directory", try directory,
            "--threads", String(threadCount),
            "--seconds", String(duration.seconds),
        ]
        for argument in arguments { all += ["--child-arg", argument] }
        if let seed = injectionSeed {
            // Relaxed: only distinct seeds are needed.
            all += ["--inject", String(seed &+ UInt64(childOrdinal.add(1, ordering: .relaxed)))]
        }
        return try ChildProcess.launch(arguments: all)
    }
}

/// Where a worker thread leaves its results for the coordinator. Written by the worker before
/// it exits, read by the coordinator after pthread_join: never accessed concurrently.
private final class WorkerSlot<T>: @unchecked Sendable {
    var result: T?
    var operations = 0
    var latencies: LatencyHistogram?
}

extension Duration {
    /// The duration in whole nanoseconds (saturating at zero for negative durations).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
