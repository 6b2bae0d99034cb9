// JobQueue: a worker pool built on Interlock, written the way a package that depends on it would.
//
// The main thread puts jobs on a LockFreeQueue and signals a Semaphore once per job; worker
// threads sleep on the semaphore and take one job each time it lets them through. A WaitGroup
// tells the main thread when every job is done. Along the way:
//   - each job looks up its tenant's rate in a read-mostly cache inside a ReadWriteLocked;
//   - results are collected inside a Locked, and progress is counted with an atomic;
//   - every 500th job adds a checkpoint to a ledger file under a DistributedLock, the lock that
//     other processes (or other hosts, over NFS) using the same ledger would respect too.
// The program checks every result against a serial computation and exits 1 if anything is wrong.

import Glibc
import Interlock

/// What a worker takes off the queue. A queue is Sendable only when its elements are.
enum Job: Sendable {
    case price(id: Int, tenant: Int, units: Int)
    case stop
}

/// Stands in for something slow (a database query, a config parse) that is worth caching.
func lookUpRate(tenant: Int) -> Int {
    var x = UInt64(tenant + 1)
    for _ in 0..<100_000 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    return Int(x >> 54) + 1
}

/// A read-mostly cache. Hits share the lock (many readers at once); a miss computes the rate
/// outside any lock, then takes the lock exclusively just long enough to store it. The rates
/// live inside their `ReadWriteLocked`, so nothing reaches them without the lock and the class
/// is `Sendable` as the compiler checks it (no `@unchecked`).
final class RateCache: Sendable {
    private let rates = ReadWriteLocked<[Int: Int]>([:])
    let computed = AtomicInt()  // misses: can exceed the tenants when two workers miss at once
    let stored = AtomicInt()  // rates stored: exactly one per tenant

    func rate(for tenant: Int) -> Int {
        if let rate = rates.withReadLock({ $0[tenant] }) { return rate }
        computed.increment(ordering: .relaxed)
        let fresh = lookUpRate(tenant: tenant)
        return rates.withWriteLock { rates in
            if let stored = rates[tenant] { return stored }  // another worker got there first
            rates[tenant] = fresh
            stored.increment(ordering: .relaxed)
            return fresh
        }
    }
}

/// Each job's result, by job id, inside a `Locked` (same reasoning as `RateCache`).
final class Results: Sendable {
    private let state: Locked<(values: [Int?], duplicates: Int)>

    init(count: Int) { state = Locked((values: Array(repeating: nil, count: count), duplicates: 0)) }

    func record(_ value: Int, for id: Int) {
        state.withLock { state in
            if state.values[id] != nil { state.duplicates += 1 }
            state.values[id] = value
        }
    }

    func snapshot() -> (values: [Int?], duplicates: Int) { state.withLock { $0 } }
}

/// A count kept in a file. Adding one is read, add, write: three system calls, so two workers
/// (or two processes) could both read 7 and both write 8. The DistributedLock makes it atomic
/// for everyone who takes the same lock, in this process or any other.
struct Ledger {
    let path: String
    let lockPath: String

    func addCheckpoint() {
        do {
            // Cheap: creating the object touches nothing; the lock is an entry at lockPath
            // that exists only while someone holds it.
            let lock = try DistributedLock(path: lockPath)
            guard try lock.lock(before: .now + .seconds(30)) else {
                return fail(
                    "ledger lock not acquired within 30 s (held by \(String(describing: try? lock.lockInfo())))")
            }
            let count = read()
            sched_yield()  // widens the read-write window that the lock protects
            write(count + 1)
            try lock.unlock()  // throws if someone broke our lock meanwhile: then the count is suspect
        } catch {
            fail("ledger: \(error)")  // DistributedLockError names the path and the OS reason
        }
    }

    /// The count in the file; 0 before the first checkpoint, -1 if the file is garbled.
    func read() -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let length = Glibc.read(fd, &bytes, bytes.count)
        return Int(String(decoding: bytes.prefix(max(length, 0)), as: UTF8.self)) ?? -1
    }

    private func write(_ count: Int) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
        defer { close(fd) }
        let text = Array(String(count).utf8)
        precondition(Glibc.write(fd, text, text.count) == text.count, "write \(path) failed")
    }
}

let failures = AtomicInt()

func fail(_ message: String) {
    failures.increment()
    print("JobQueue: FAIL: \(message)")
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fail(message()) }
}

@main
enum JobQueue {
    static let workerCount = 4, jobCount = 10_000, tenantCount = 16, checkpointEvery = 500

    static func main() {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/jobqueue.XXXXXX".utf8CString)
        guard
            let directory = template.withUnsafeMutableBufferPointer({
                mkdtemp($0.baseAddress!).map { String(cString: $0) }
            })
        else { fatalError("mkdtemp in \(base): \(String(cString: strerror(errno)))") }
        let ledger = Ledger(path: directory + "/ledger", lockPath: directory + "/ledger.lock")

        let queue = LockFreeQueue<Job>()
        let jobsReady = Interlock.Semaphore(value: 0)  // one unit per queued job (Glibc has a Semaphore too)
        let unfinished = WaitGroup()
        let processed = AtomicInt()
        let cache = RateCache()
        let results = Results(count: jobCount)
        let start = ContinuousClock.now

        let workers = (0..<workerCount).map { _ in
            WorkerThread {
                while true {
                    jobsReady.wait()  // sleeps in the kernel while there is nothing to do
                    // Each unit was signalled after its job was enqueued, so a job is there.
                    guard let job = queue.dequeue() else { return fail("woken, but the queue was empty") }
                    guard case .price(let id, let tenant, let units) = job else { return }  // .stop
                    results.record(cache.rate(for: tenant) * units, for: id)
                    if id % checkpointEvery == 0 { ledger.addCheckpoint() }
                    // Relaxed is enough: the count needs no ordering of its own, because
                    // unfinished.wait() already orders everything a worker did before its
                    // leave() ahead of whatever the main thread does after the wait.
                    processed.increment(ordering: .relaxed)
                    unfinished.leave()
                }
            }
        }

        unfinished.enter(jobCount)  // before the first job, so the count cannot reach zero early
        for id in 0..<jobCount {
            queue.enqueue(.price(id: id, tenant: id % tenantCount, units: id % 7 + 1))
            jobsReady.signal()
        }
        guard unfinished.wait(before: .now + .seconds(120)) else {
            print("JobQueue: FAIL: \(unfinished.count) jobs still unfinished after 120 s")
            exit(1)
        }
        let elapsed = ContinuousClock.now - start
        // One stop per worker, queued behind all the work (the queue is FIFO).
        for _ in workers { queue.enqueue(.stop); jobsReady.signal() }
        for worker in workers { worker.join() }

        // Check everything against a serial computation.
        let rates = (0..<tenantCount).map { lookUpRate(tenant: $0) }
        let expected = (0..<jobCount).reduce(0) { $0 + rates[$1 % tenantCount] * ($1 % 7 + 1) }
        let (values, duplicates) = results.snapshot()
        let checkpoints = ledger.read()
        check(processed.load() == jobCount, "processed \(processed.load()) of \(jobCount) jobs")
        check(duplicates == 0, "\(duplicates) jobs ran more than once")
        check(!values.contains { $0 == nil }, "\(values.filter { $0 == nil }.count) jobs have no result")
        check(values.reduce(0) { $0 + ($1 ?? 0) } == expected, "the results do not add up to \(expected)")
        check(cache.stored.load() == tenantCount, "the cache stored \(cache.stored.load()) rates, not \(tenantCount)")
        check(
            checkpoints == jobCount / checkpointEvery, "ledger reads \(checkpoints), not \(jobCount / checkpointEvery)")
        check(queue.isEmpty, "jobs left on the queue")
        check(access(ledger.lockPath, F_OK) != 0, "the ledger's DistributedLock is still held")
        unlink(ledger.path)
        check(rmdir(directory) == 0, "\(directory) is not empty: something was left behind")

        let milliseconds = Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
        print(
            "JobQueue: \(jobCount) jobs on \(workerCount) threads in \(Int(milliseconds)) ms; "
                + "cache: \(cache.stored.load()) rates stored, \(cache.computed.load()) computed; "
                + "ledger: \(checkpoints) checkpoints; "
                + (failures.load() == 0 ? "OK" : "\(failures.load()) FAILED"))
        exit(failures.load() == 0 ? 0 : 1)
    }
}
