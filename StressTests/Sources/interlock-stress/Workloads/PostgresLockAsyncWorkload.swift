// Stress workload `postgres-lock-async`: PostgresLock's async forms from tasks, with random
// cancellation, beside a blocking thread on the same names, against the server of
// `--postgres CONNINFO` (skipped without it, as `postgres-lock` is).
//
// Names `interlock-stress/postgres-lock-async/<pid>/<k>`, k < 2. Worker 0 is a blocking thread
// (tryLock or lock(before:) 1 ms ahead, as in `postgres-lock`); every other worker drives
// tasks: an operation starts a batch of 4 tasks, each with its own objects (one per name, kept
// across batches: 4 x 2 sessions per driver), that take a name's lock through one entry point
// at random: tryLock() async (1 in 4), lock(before:) async 1 ms ahead (1 in 4) or 50 ms ahead
// (1 in 4), withLock(before:) 20 ms ahead (1 in 4); hold it through the same section as
// `postgres-lock` (PostgresLockShared: the inside flag, a rising fencing token, a plain counter's
// read-yield-write, 1 in 50 checkHeld() and holderInfo()); and unlock() async. The driver
// cancels a random half of the batch after a random number of yields, then waits for it (a
// WaitGroup).
//
// Invariants, beside those of the section: a lock(before:) that gave up did so at or after its
// deadline; a task whose wait threw CancellationError leaves its object not holding
// (fencingToken nil); no other error; at the end each name's counter equals its sections, no
// object reports a token, and the server shows no holder: a cancellation that raced the grant
// and left a session holding would show there (and starve the blocking thread meanwhile).
//
// Memory ordering: as in `postgres-lock`, the inside flag gives ThreadSanitizer the edge that
// the server's exclusion provides through sockets.

import Interlock
import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

extension Workload {
    /// `postgres-lock-async`; see the file comment.
    static let postgresLockAsync = Workload(
        name: "postgres-lock-async",
        summary:
            "PostgresLock async forms from tasks cancelled at random, beside a blocking thread (needs --postgres); "
            + "exclusion, exact counts, rising tokens, nothing held after a cancellation",
        latencySampleInterval: 1,
        skipReason: postgresLockSkipReason
    ) { context in
        guard let connectionString = context.postgresConnectionString else {
            throw HarnessError(description: "postgres-lock-async ran without --postgres")
        }
        let nameCount = PostgresLockShared.nameCount
        let names = (0..<nameCount).map { "interlock-stress/postgres-lock-async/\(getpid())/\($0)" }
        let batch = 4
        // Objects: the blocking thread's (one per name), then 4 per name for each driver.
        var objects: [[[PostgresLock]]] = []
        for worker in 0..<context.threadCount {
            var perSlot: [[PostgresLock]] = []
            for _ in 0..<(worker == 0 ? 1 : batch) {
                do {
                    perSlot.append(try names.map { try PostgresLock(connectionString: connectionString, name: $0) })
                } catch {
                    throw HarnessError(description: "worker \(worker) cannot open its PostgresLocks: \(error)")
                }
            }
            objects.append(perSlot)
        }
        let allObjects = objects
        let shared = PostgresLockShared()
        let sections = (0..<nameCount).map { _ in AtomicInt(0) }
        let cancelled = AtomicInt(0)
        let timeouts = AtomicInt(0)

        let perThread = context.runThreads { worker -> Int in
            let me = worker.index
            var errors = 0
            while worker.keepRunning && errors < 10 {
                if me == 0 {
                    let choice = worker.random.next()
                    let k = Int(choice & 1)
                    let lock = allObjects[0][0][k]
                    worker.operation {
                        do throws(PostgresLockError) {
                            let deadline = ContinuousClock.now + .milliseconds(1)
                            let taken = choice & 2 == 0 ? try lock.tryLock() : try lock.lock(before: deadline)
                            guard taken else { return }
                            _ = sections[k].increment()
                            try shared.section(name: k, lock: lock, probe: false, thread: me, context: context)
                        } catch {
                            errors += 1
                            context.fail("blocking thread: \(error)")
                            if lock.fencingToken != nil { try? lock.unlock() }
                        }
                    }
                    continue
                }
                worker.operation {
                    let group = WaitGroup()
                    group.enter(batch)
                    var tasks: [Task<Void, Never>] = []
                    for slot in 0..<batch {
                        let choice = worker.random.next()
                        let k = Int(choice & 1)
                        let lock = allObjects[me][slot][k]
                        tasks.append(
                            Task {
                                defer { group.leave() }
                                await asyncIteration(
                                    lock: lock, name: k, choice: choice, shared: shared, sections: sections[k],
                                    cancelled: cancelled, timeouts: timeouts, thread: me, context: context)
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
        for k in 0..<nameCount {
            let counter = shared.counters.base[k]
            context.check(
                counter == sections[k].load(),
                "\(names[k]): the plain counter reads \(counter) after \(sections[k].load()) sections: holders overlapped"
            )
            context.check(sections[k].load() > 0, "\(names[k]) was never taken")
        }
        for lock in allObjects.joined().joined() where lock.fencingToken != nil {
            context.fail("a lock on \(lock.name) still reports a fencing token after the run")
        }
        for k in 0..<nameCount {
            do {
                if let holder = try allObjects[0][0][k].holderInfo() {
                    context.fail(
                        "\(names[k]) is still held by backend \(holder.backendProcessID) after every object let go")
                }
            } catch {
                context.fail("after the run, holderInfo() on \(names[k]) threw: \(error)")
            }
        }
        context.check(perThread.reduce(0, +) == 0, "calls threw (see above)")
        context.note("sessions", allObjects.joined().joined().count)
        context.note("acquisitions", sections.map { $0.load() }.reduce(0, +))
        context.note("waits cancelled", cancelled.load())
        context.note("lock(before:) timed out", timeouts.load())
    }
}

/// One task's iteration of `postgres-lock-async` (see the file comment).
private func asyncIteration(
    lock: PostgresLock, name k: Int, choice: UInt64, shared: PostgresLockShared, sections: AtomicInt,
    cancelled: AtomicInt, timeouts: AtomicInt, thread: Int, context: WorkloadContext
) async {
    let entry = (choice >> 1) & 3
    let probe = (choice >> 8) % 50 == 0
    do {
        if entry == 3 {
            // withLock: the section's checks inside the body; the release is withLock's own.
            let deadline = ContinuousClock.now + .milliseconds(20)
            let ran: Void? = try await lock.withLock(before: deadline) { _ in
                _ = sections.increment()
                shared.enter(name: k, lock: lock, thread: thread, context: context)
                shared.leave(name: k)
            }
            if ran == nil {
                _ = timeouts.increment()
                if ContinuousClock.now < deadline { context.fail("withLock gave up before its deadline") }
            }
        } else {
            let taken: Bool
            if entry == 0 {
                taken = try await lock.tryLock()
            } else {
                let deadline = ContinuousClock.now + (entry == 1 ? .milliseconds(1) : .milliseconds(50))
                taken = try await lock.lock(before: deadline)
                if !taken {
                    _ = timeouts.increment()
                    if ContinuousClock.now < deadline { context.fail("lock(before:) gave up before its deadline") }
                }
            }
            guard taken else { return }
            _ = sections.increment()
            shared.enter(name: k, lock: lock, thread: thread, context: context)
            if probe {
                let held = try await lock.checkHeld()
                // holderInfo has no async form: a blocking round trip, rare enough.
                shared.probeHolder(lock, held: held, holder: try lock.holderInfo(), thread: thread, context: context)
            }
            shared.leave(name: k)
            try await unlockEvenIfCancelled(lock)
        }
    } catch is CancellationError {
        _ = cancelled.increment()
        if let token = lock.fencingToken {
            context.fail("a cancelled wait left \(lock.name) held (token \(token))")
        }
    } catch {
        context.fail("thread \(thread)'s task: \(error)")
        if lock.fencingToken != nil { try? await unlockEvenIfCancelled(lock) }
    }
    if let token = lock.fencingToken {
        context.fail("\(lock.name) reports token \(token) after its task let go")
    }
}

/// unlock() async from a task that may be cancelled: its turn on the object's gate is waited
/// for in a task of its own, which the cancellation does not reach.
private func unlockEvenIfCancelled(_ lock: PostgresLock) async throws {
    try await Task { try await lock.unlock() }.value
}
