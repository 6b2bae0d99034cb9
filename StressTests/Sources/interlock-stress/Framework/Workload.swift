// What a stress workload is: a name, a one-line summary and a function that runs it against a
// `WorkloadContext`. See Registry.swift for how to add one.

/// One stress workload: a primitive (or one facet of it) put under load, with its invariants.
///
/// `run` is called once, on the harness's main thread. It sets up the shared state, calls
/// ``WorkloadContext/runThreads(_:)`` once to load it from every thread until the deadline,
/// then checks the invariants and reports each violation with ``WorkloadContext/fail(_:)``.
/// A workload passes when nothing was reported and `run` did not throw.
///
/// ```swift
/// extension Workload {
///     static let myCounter = Workload(
///         name: "my-counter", summary: "increments from every thread; exact total"
///     ) { context in
///         let counter = AtomicInt64()
///         let perThread = context.runThreads { worker in
///             while worker.keepRunning {
///                 worker.operation { counter.increment() }
///             }
///             return worker.operations
///         }
///         context.check(counter.load() == Int64(perThread.reduce(0, +)), "lost increments")
///     }
/// }
/// ```
struct Workload: Sendable {
    /// The name used by `--only` and in the report: lowercase words joined by dashes,
    /// starting with the primitive's name (`atomic-increment-64`, `lock-mutual-exclusion`).
    let name: String
    /// One line for `--list`: what runs and what is checked.
    let summary: String
    /// Latency is sampled on every k-th operation of each thread (k a power of two). Keep the
    /// default for operations of a few nanoseconds; use 1 for operations that take microseconds
    /// (system calls, file-system locks), so that short runs still collect samples.
    let latencySampleInterval: Int
    /// Sets up, loads and checks the primitive. Throwing counts as a failure.
    let run: @Sendable (WorkloadContext) throws -> Void
    /// The entry point of this workload's child processes, for workloads that need several
    /// processes (the distributed lock): ``WorkloadContext/spawnChild(arguments:)`` re-runs
    /// the harness as `interlock-stress --child NAME ...`, which calls this and exits with its
    /// result. `nil` for workloads that use threads only.
    let child: (@Sendable (ChildInvocation) throws -> Int32)?
    /// Why the workload cannot run with this configuration (it needs a server that was not
    /// given), in one line saying how to run it; `nil` when it can run. A skipped workload is
    /// reported as such and counts as neither passed nor failed.
    let skipReason: @Sendable (RunConfiguration) -> String?

    /// Creates a workload; see the type's documentation.
    init(
        name: String,
        summary: String,
        latencySampleInterval: Int = 64,
        child: (@Sendable (ChildInvocation) throws -> Int32)? = nil,
        skipReason: @escaping @Sendable (RunConfiguration) -> String? = { _ in nil },
        run: @escaping @Sendable (WorkloadContext) throws -> Void
    ) {
        precondition(
            latencySampleInterval > 0 && latencySampleInterval & (latencySampleInterval - 1) == 0,
            "Workload \(name): latencySampleInterval must be a power of two, not \(latencySampleInterval)")
        self.name = name
        self.summary = summary
        self.latencySampleInterval = latencySampleInterval
        self.child = child
        self.skipReason = skipReason
        self.run = run
    }
}

/// What a child process of a workload receives (see ``Workload/child``).
struct ChildInvocation: Sendable {
    /// The workload's name.
    let workloadName: String
    /// The parent's scratch directory for this workload (``WorkloadContext/directory``).
    let directory: String
    /// The parent's `--threads`.
    let threads: Int
    /// The parent's `--seconds`.
    let seconds: Double
    /// The arguments the parent passed to ``WorkloadContext/spawnChild(arguments:)``.
    let arguments: [String]
}
