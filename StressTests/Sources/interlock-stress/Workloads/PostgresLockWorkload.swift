// Stress workload `postgres-lock`: every worker thread takes PostgresLocks (InterlockPostgres)
// on a few names, each thread through its own objects (one session per object), against the
// server of `--postgres CONNINFO`. Without `--postgres` the workload is skipped (see
// Workload.skipReason): it needs a server, which the harness does not start itself
// (scripts/with-postgres.sh runs a command next to a throwaway one).
//
// The names are `interlock-stress/postgres-lock/<pid>/<k>`, k < 2: this process's own locks,
// so that another run against the same server neither contends nor disturbs the counts. Each
// thread opens one PostgresLock per name before the run (2 x --threads sessions in all; the
// throwaway server allows 200).
//
// An iteration picks a name and takes its lock through one of the entry points, at random:
// tryLock() (1 in 2), or lock(before:) with a deadline 1 ms ahead (1 in 4, so that the wait in
// the server often times out) or 50 ms ahead (1 in 4). Holding it:
//   1. the name's "inside" flag, exchanged to true, must have been false: nobody else inside;
//   2. fencingToken must be set and strictly greater than the largest token seen for the name
//      by any thread, which it then becomes (compared and updated while holding the lock);
//   3. the name's plain counter is read, the thread yields, and the value + 1 is written back:
//      a non-atomic read-modify-write, so overlapping holders lose increments;
//   4. 1 iteration in 200: checkHeld() must say true, and holderInfo() must name this object;
//   5. the flag is cleared; unlock(); fencingToken must then be nil.
// An operation is one iteration, taken or not (a failed tryLock, a timed-out lock(before:)).
//
// Invariants: the above in every section; a lock(before:) that gave up did so at its deadline,
// not before; no call threw; at the end each name's counter equals the sections run on it, every
// name was taken at least once, no object reports a fencing token, and the server shows no
// holder of either name (holderInfo): a session that still holds a lock after its object
// unlocked it keeps the name from every other session.
//
// Memory ordering: the exclusion comes from the server, through sockets that ThreadSanitizer
// does not see as synchronization. The inside flag provides the in-process edge: the holder
// clears it with a release store before unlock, the next holder sets it with an acquire
// exchange after its lock returned, which reads that store (or a later one); so the plain
// counter and the token maximum are ordered whenever the server's exclusion holds, and a
// broken exclusion shows up as a flag found set, lost increments and a TSan report.
//
// Fault injection (--inject) changes nothing here: PostgresLock has no injection points (its
// mutex is the standard library's), so the workload runs as without it.

import Foundation
import Interlock
import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

extension Workload {
    /// `postgres-lock`; see the file comment.
    static let postgresLock = Workload(
        name: "postgres-lock",
        summary: "PostgresLock on 2 names, an object per thread and name, tryLock/lock(before:) (needs --postgres); "
            + "exclusion, exact counts, rising fencing tokens, checkHeld/holderInfo",
        latencySampleInterval: 1,
        skipReason: postgresLockSkipReason
    ) { context in
        guard let connectionString = context.postgresConnectionString else {
            throw HarnessError(description: "postgres-lock ran without --postgres")
        }
        let nameCount = PostgresLockShared.nameCount
        let names = (0..<nameCount).map { "interlock-stress/postgres-lock/\(getpid())/\($0)" }
        // Every thread's objects, opened one after the other (the first creates the schema).
        var locks: [[PostgresLock]] = []
        for thread in 0..<context.threadCount {
            var mine: [PostgresLock] = []
            for name in names {
                do {
                    mine.append(try PostgresLock(connectionString: connectionString, name: name))
                } catch {
                    throw HarnessError(
                        description: "thread \(thread) cannot open its PostgresLock on \(name) "
                            + "(\(context.threadCount) threads x \(nameCount) names = "
                            + "\(context.threadCount * nameCount) sessions): \(error)")
                }
            }
            locks.append(mine)
        }
        let shared = PostgresLockShared()
        let allLocks = locks
        let perThread = context.runThreads { worker -> PostgresLockTally in
            var tally = PostgresLockTally()
            let mine = allLocks[worker.index]
            let me = worker.index
            while worker.keepRunning {
                let choice = worker.random.next()
                let k = Int(choice & 1)
                let entry = (choice >> 1) & 3
                let probe = (choice >> 8) % 200 == 0
                let lock = mine[k]
                let outcome: Result<Bool, PostgresLockError> = worker.operation {
                    do throws(PostgresLockError) {
                        let taken: Bool
                        if entry < 2 {
                            taken = try lock.tryLock()
                            if !taken { tally.busy += 1 }
                        } else {
                            let deadline = ContinuousClock.now + (entry == 2 ? .milliseconds(1) : .milliseconds(50))
                            taken = try lock.lock(before: deadline)
                            if !taken {
                                tally.timeouts += 1
                                if entry == 3 { tally.longTimeouts += 1 }
                                let now = ContinuousClock.now
                                if now < deadline {
                                    context.fail(
                                        "thread \(me): lock(before:) on \(names[k]) gave up "
                                            + "\(deadline - now) before its deadline")
                                }
                            }
                        }
                        guard taken else { return .success(false) }
                        // Counted first: the section bumps the counter before anything in it can throw.
                        tally.sections[k] += 1
                        if probe { tally.probes += 1 }
                        try shared.section(name: k, lock: lock, probe: probe, thread: me, context: context)
                        return .success(true)
                    } catch {
                        return .failure(error)
                    }
                }
                if case .failure(let error) = outcome {
                    tally.errors += 1
                    context.fail("thread \(me): \(error)")
                    // Whatever the object believes, leave it unlocked before going on.
                    if lock.fencingToken != nil { try? lock.unlock() }
                    if tally.errors >= 10 { break }  // a server gone: stop, already failed
                }
            }
            return tally
        }
        var sections = Array(repeating: 0, count: nameCount)
        for tally in perThread {
            for k in 0..<nameCount { sections[k] += tally.sections[k] }
        }
        for k in 0..<nameCount {
            let counter = shared.counters.base[k]
            context.check(
                counter == sections[k],
                "\(names[k]): the plain counter reads \(counter) after \(sections[k]) sections: holders overlapped")
            context.check(sections[k] > 0, "\(names[k]) was never taken")
            context.check(!shared.inside[k].load(), "\(names[k]): the inside flag is still set after the run")
        }
        for (thread, objects) in locks.enumerated() {
            for lock in objects where lock.fencingToken != nil {
                context.fail("thread \(thread)'s lock on \(lock.name) still reports a fencing token after the run")
            }
        }
        // Every object unlocked: the server must show no holder, or a session kept a lock that
        // its object does not know it holds (and the name is stuck for everyone else).
        for k in 0..<nameCount {
            for (thread, objects) in locks.enumerated() {
                do {
                    if let holder = try objects[k].holderInfo() {
                        let whose = holder.isThisObject ? " (the session of thread \(thread)'s object)" : ""
                        context.fail(
                            "\(names[k]) is still held by backend \(holder.backendProcessID)\(whose) after every "
                                + "object unlocked it")
                    }
                } catch {
                    context.fail("after the run, thread \(thread)'s holderInfo() on \(names[k]) threw: \(error)")
                    continue
                }
                break  // one answer per name is enough
            }
        }
        let total = perThread.reduce(PostgresLockTally()) { $0.adding($1) }
        context.note("sessions", context.threadCount * nameCount)
        context.note("acquisitions", sections.reduce(0, +))
        context.note("tryLock busy", total.busy)
        context.note("lock(before:) timed out", total.timeouts)
        context.note("lock(before:) 50 ms timed out", total.longTimeouts)
        context.note("checkHeld+holderInfo probes", total.probes)
        context.note("largest fencing token", shared.maxTokens.map { $0.load() }.max() ?? 0)
    }

    /// Why `postgres-lock` cannot run: no `--postgres`.
    @Sendable
    static func postgresLockSkipReason(_ configuration: RunConfiguration) -> String? {
        configuration.postgres != nil
            ? nil
            : "needs a PostgreSQL server: pass --postgres CONNINFO (scripts/with-postgres.sh COMMAND "
                + "runs COMMAND next to a throwaway server, its CONNINFO in $INTERLOCK_POSTGRES)"
    }
}

/// What one thread counted.
struct PostgresLockTally: Sendable {
    var sections = Array(repeating: 0, count: PostgresLockShared.nameCount)
    var busy = 0
    var timeouts = 0
    var longTimeouts = 0
    var probes = 0
    var errors = 0

    func adding(_ other: Self) -> Self {
        var sum = self
        for k in sections.indices { sum.sections[k] += other.sections[k] }
        sum.busy += other.busy
        sum.timeouts += other.timeouts
        sum.longTimeouts += other.longTimeouts
        sum.probes += other.probes
        sum.errors += other.errors
        return sum
    }
}

/// The state the locks protect, per name: the inside flag, the largest token seen, the plain
/// counter (see the file comment).
final class PostgresLockShared: Sendable {
    static let nameCount = 2

    let inside = (0..<nameCount).map { _ in AtomicBool(false) }
    let maxTokens = (0..<nameCount).map { _ in AtomicInt64(0) }
    /// Plain memory, written only while holding the name's lock.
    let counters = SharedBuffer<Int>(count: nameCount, repeating: 0)

    /// The critical section on name `k`, holding `lock`; it unlocks before returning. Violations
    /// go to `context`; a PostgresLock call that throws is passed on (after an unlock attempt).
    func section(name k: Int, lock: PostgresLock, probe: Bool, thread: Int, context: WorkloadContext)
        throws(PostgresLockError)
    {
        enter(name: k, lock: lock, thread: thread, context: context)
        var failure: PostgresLockError?
        if probe {
            do throws(PostgresLockError) {
                try probeHolder(
                    lock, held: lock.checkHeld(), holder: lock.holderInfo(), thread: thread, context: context)
            } catch {
                failure = error
            }
        }
        leave(name: k)
        try lock.unlock()
        if let failure { throw failure }
        if let token = lock.fencingToken {
            context.fail("thread \(thread): fencingToken is \(token) after unlock of \(lock.name), not nil")
        }
    }

    /// Checks what checkHeld() and holderInfo() said while `lock` was held.
    func probeHolder(
        _ lock: PostgresLock, held: Bool, holder: PostgresLock.Holder?, thread: Int, context: WorkloadContext
    ) {
        if !held { context.fail("thread \(thread): checkHeld() said false while holding \(lock.name)") }
        if let holder {
            if !holder.isThisObject {
                context.fail(
                    "thread \(thread): holderInfo() names backend \(holder.backendProcessID), "
                        + "not this object's session, while holding \(lock.name)")
            }
        } else {
            context.fail("thread \(thread): holderInfo() says nobody holds \(lock.name) while this object does")
        }
    }

    /// The start of a section on name `k`, holding `lock`: nobody else inside, a rising token,
    /// the plain counter's increment.
    func enter(name k: Int, lock: PostgresLock, thread: Int, context: WorkloadContext) {
        // Acquire: pairs with the previous holder's release store in leave (see the file comment).
        if inside[k].exchange(true, ordering: .acquireRelease) {
            context.fail("thread \(thread) took \(lock.name) while another thread was inside")
        }
        if let token = lock.fencingToken {
            // Relaxed: ordered by the inside flag; compared and updated under the lock.
            let previous = maxTokens[k].load(ordering: .relaxed)
            if token <= previous {
                context.fail(
                    "thread \(thread): fencing token \(token) on \(lock.name) is not above the last one seen, "
                        + "\(previous)")
            }
            maxTokens[k].store(max(token, previous), ordering: .relaxed)
        } else {
            context.fail("thread \(thread): fencingToken is nil while holding \(lock.name)")
        }
        let value = counters.base[k]
        sched_yield()
        counters.base[k] = value + 1
    }

    /// The end of a section on name `k`, before the unlock.
    func leave(name k: Int) {
        // Release: publishes the counter and the token maximum to the next holder.
        inside[k].store(false, ordering: .release)
    }
}
