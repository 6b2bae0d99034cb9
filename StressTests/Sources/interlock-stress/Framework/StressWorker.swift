// The per-thread side of a workload: what each worker thread's body receives.
//
// A class, so that an operation's closure may read the worker (`worker.index`) while
// `operation` runs: with a struct passed `inout` that is an exclusivity conflict. Its mutable
// fields are `@exclusivity(unchecked)`: the object is confined to its thread, and the checks
// would cost a runtime call per operation.
//
// Everything here is owned by one thread and is plain memory: the operation count, the latency
// histogram and the random generator. The only shared words are the stop flag (read, relaxed)
// and the thread's progress counter (written, relaxed); neither carries data, and the exact
// counts and histograms reach the coordinator through pthread_join, which synchronizes.

import Interlock

/// One worker thread's view of a running workload (see ``WorkloadContext/runThreads(_:)``).
///
/// Loop `while worker.keepRunning { worker.operation { ... } }`: `operation` counts the
/// operation exactly and times every k-th one (``Workload/latencySampleInterval``).
final class StressWorker {
    /// This thread's index, `0..<threadCount`.
    let index: Int
    /// How many worker threads run the workload.
    let threadCount: Int
    /// When the run ends. Workloads that block (waiting on a condition, a child process)
    /// wait until this instant at the latest, then check ``keepRunning``.
    let deadline: ContinuousClock.Instant
    /// A generator seeded differently on every thread.
    @exclusivity(unchecked) var random: FastRandom
    /// Operations counted so far by ``operation(_:)`` and ``count(_:)``.
    @exclusivity(unchecked) private(set) var operations: Int = 0
    /// The latency samples of this thread, in nanoseconds.
    @exclusivity(unchecked) private(set) var latencies: LatencyHistogram

    private let sampleMask: Int
    private let stopFlag: AtomicBool
    private let progress: AtomicInt

    init(
        index: Int, threadCount: Int, deadline: ContinuousClock.Instant, sampleInterval: Int,
        stopFlag: AtomicBool, progress: AtomicInt
    ) {
        self.index = index
        self.threadCount = threadCount
        self.deadline = deadline
        self.random = FastRandom(seed: UInt64(index))
        self.latencies = .latencies()
        self.sampleMask = sampleInterval - 1
        self.stopFlag = stopFlag
        self.progress = progress
    }

    /// `false` once the run's deadline has passed (the coordinator raised the stop flag).
    @inline(__always)
    var keepRunning: Bool {
        // Relaxed: the flag carries no data, it only ends the loop; seeing it a little late
        // costs a few extra operations, which are counted like the others.
        !stopFlag.load(ordering: .relaxed)
    }

    /// Runs one operation: counts it, and times it when it is a sampled one.
    @inline(__always) @discardableResult
    func operation<R>(_ body: () throws -> R) rethrows -> R {
        operations &+= 1
        if operations & sampleMask != 0 { return try body() }
        let start = monotonicNanoseconds()
        let result = try body()
        record(latency: monotonicNanoseconds() &- start)
        publish()
        return result
    }

    /// Counts `n` operations that were not run through ``operation(_:)``.
    @inline(__always)
    func count(_ n: Int = 1) {
        operations &+= n
        publish()
    }

    /// Records one latency sample measured by the workload itself.
    @inline(__always)
    func record(latency nanoseconds: UInt64) {
        _ = latencies.record(nanoseconds)
    }

    /// Makes this thread's count visible to the progress line.
    @inline(__always)
    func publish() {
        // Relaxed: read only by the progress display; the exact total travels through join.
        progress.store(operations, ordering: .relaxed)
    }
}
