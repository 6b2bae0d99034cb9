// Stress workload `postgres-semaphore`: PostgresSemaphore from a blocking thread and from tasks
// cancelled at random, against the server of `--postgres CONNINFO` (skipped without it, as
// `postgres-lock` is).
//
// One name, `interlock-stress/postgres-semaphore/<pid>`, of 2 permits. Worker 0 is a blocking
// thread (tryAcquire, then release). Every other worker drives tasks: an operation starts a
// batch of 3 tasks, each with its own object (kept across batches), that acquire(before:) 1 ms
// or 50 ms ahead (1 in 2 each), pass through the section, and release; the driver cancels a
// random half of the batch after a random number of yields, then waits for it (a WaitGroup).
//
// The section: the holders counter goes up (never above the permits), the permit's token
// joins the set of tokens held now (never already there: tokens are unique), a yield, and both
// are undone before the release.
//
// Invariants, beside the section's: an acquire that gave up did so at or after its deadline; a
// task whose wait threw CancellationError holds nothing (fencingToken nil); no other error; at
// the end no object reports a token, no holder is counted, and `permits` fresh objects each
// take a permit at once: a cancellation that raced the grant and left a session holding a slot
// would make one of them fail.
//
// Memory ordering: the holders counter is read-modify-written seq_cst (it is the invariant's
// witness, not a synchronizer); the token set is under a Lock.

import Interlock
import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

extension Workload {
    /// `postgres-semaphore`; see the file comment.
    static let postgresSemaphore = Workload(
        name: "postgres-semaphore",
        summary:
            "PostgresSemaphore from a blocking thread and tasks cancelled at random (needs --postgres); "
            + "never more holders than permits, unique tokens, nothing held after a cancellation",
        latencySampleInterval: 1,
        skipReason: postgresLockSkipReason
    ) { context in
        guard let connectionString = context.postgresConnectionString else {
            throw HarnessError(description: "postgres-semaphore ran without --postgres")
        }
        let name = "interlock-stress/postgres-semaphore/\(getpid())"
        let permits = 2
        let batch = 3
        var objects: [[PostgresSemaphore]] = []
        for worker in 0..<context.threadCount {
            do {
                objects.append(
                    try (0..<(worker == 0 ? 1 : batch)).map { _ in
                        try PostgresSemaphore(connectionString: connectionString, name: name, permits: permits)
                    })
            } catch {
                throw HarnessError(description: "worker \(worker) cannot open its PostgresSemaphores: \(error)")
            }
        }
        let allObjects = objects
        let shared = PostgresSemaphoreShared(permits: permits)
        let cancelled = AtomicInt(0)
        let timeouts = AtomicInt(0)

        let perThread = context.runThreads { worker -> Int in
            let me = worker.index
            var errors = 0
            while worker.keepRunning && errors < 10 {
                if me == 0 {
                    let semaphore = allObjects[0][0]
                    worker.operation {
                        do throws(PostgresLockError) {
                            guard try semaphore.tryAcquire() else { return }
                            shared.section(semaphore, thread: me, context: context)
                            try semaphore.release()
                        } catch {
                            errors += 1
                            context.fail("blocking thread: \(error)")
                            if semaphore.fencingToken != nil { try? semaphore.release() }
                        }
                    }
                    continue
                }
                worker.operation {
                    let group = WaitGroup()
                    group.enter(batch)
                    var tasks: [Task<Void, Never>] = []
                    for slot in 0..<batch {
                        let semaphore = allObjects[me][slot]
                        let patience: Duration = worker.random.next() & 1 == 0 ? .milliseconds(1) : .milliseconds(50)
                        tasks.append(
                            Task {
                                defer { group.leave() }
                                await semaphoreIteration(
                                    semaphore, patience: patience, shared: shared, cancelled: cancelled,
                                    timeouts: timeouts, thread: me, context: context)
                            })
                    }
                    for task in tasks where worker.random.next() & 1 == 0 {
                        for _ in 0..<(worker.random.next() & 15) { sched_yield() }
                        task.cancel()
                    }
                    group.wait()
                }
            }
            return errors
        }
        for semaphore in allObjects.joined() where semaphore.fencingToken != nil {
            context.fail("a semaphore object still reports a fencing token after the run")
        }
        context.check(shared.holders.load() == 0, "\(shared.holders.load()) holders counted after the run")
        do {
            let fresh = try (0..<permits).map { _ in
                try PostgresSemaphore(connectionString: connectionString, name: name, permits: permits)
            }
            for (index, semaphore) in fresh.enumerated() where try !semaphore.tryAcquire() {
                context.fail("after the run, fresh object \(index) found no free permit: a permit was left held")
            }
            for semaphore in fresh where semaphore.fencingToken != nil { try semaphore.release() }
        } catch {
            context.fail("after the run, fresh objects failed: \(error)")
        }
        context.check(perThread.reduce(0, +) == 0, "calls threw (see above)")
        context.check(shared.entries.load() > 0, "no permit was ever taken")
        context.note("acquisitions", shared.entries.load())
        context.note("most holders at once", shared.most.load())
        context.note("waits cancelled", cancelled.load())
        context.note("acquire(before:) timed out", timeouts.load())
    }
}

/// The state the permits protect (see the file comment).
final class PostgresSemaphoreShared: @unchecked Sendable {
    // @unchecked: `heldTokens` is touched only under `lock`; the rest is atomic or constant.
    let permits: Int
    let holders = AtomicInt(0)
    let most = AtomicInt(0)
    let entries = AtomicInt(0)
    private let lock = Lock()
    private var heldTokens: Set<Int64> = []

    init(permits: Int) { self.permits = permits }

    /// The section, holding a permit of `semaphore`.
    func section(_ semaphore: PostgresSemaphore, thread: Int, context: WorkloadContext) {
        let now = holders.increment()
        _ = entries.increment()
        if now > permits { context.fail("thread \(thread): \(now) holders of \(permits) permits") }
        var seen = most.load()
        while now > seen, !most.compareAndSwap(seen, now) { seen = most.load() }
        guard let token = semaphore.fencingToken else {
            context.fail("thread \(thread): fencingToken is nil while holding a permit")
            _ = holders.decrement()
            return
        }
        let fresh = lock.withLock { heldTokens.insert(token).inserted }
        if !fresh { context.fail("thread \(thread): token \(token) is held by another holder too") }
        sched_yield()
        _ = lock.withLock { heldTokens.remove(token) }
        _ = holders.decrement()
    }
}

/// One task's iteration of `postgres-semaphore` (see the file comment).
private func semaphoreIteration(
    _ semaphore: PostgresSemaphore, patience: Duration, shared: PostgresSemaphoreShared, cancelled: AtomicInt,
    timeouts: AtomicInt, thread: Int, context: WorkloadContext
) async {
    do {
        let deadline = ContinuousClock.now + patience
        guard try await semaphore.acquire(before: deadline) else {
            _ = timeouts.increment()
            if ContinuousClock.now < deadline { context.fail("acquire(before:) gave up before its deadline") }
            return
        }
        shared.section(semaphore, thread: thread, context: context)
        try await Task { try await semaphore.release() }.value  // not cancelled with this task
    } catch is CancellationError {
        _ = cancelled.increment()
        if let token = semaphore.fencingToken {
            context.fail("a cancelled acquire left a permit held (token \(token))")
        }
    } catch {
        context.fail("thread \(thread)'s task: \(error)")
        if semaphore.fencingToken != nil { try? await Task { try await semaphore.release() }.value }
    }
}
