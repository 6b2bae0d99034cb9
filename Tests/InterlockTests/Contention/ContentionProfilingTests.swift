// Contention profiling (the package trait ContentionProfiling): what a profile records, for
// which primitives, with which numbers, and what it writes. Each test is an exit test, so that
// INTERLOCK_CONTENTION is read fresh in its own process (ContentionTestSupport.swift).

#if INTERLOCK_CONTENTION
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("Contention profiling")
struct ContentionProfilingTests {
    @Test("a contended named lock is reported first with its waits counted; an uncontended one not at all")
    func namedLocks() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            require(ContentionProfiling.isEnabled, "not enabled by INTERLOCK_CONTENTION=1")
            let hot = Lock(), warm = Lock(), cold = Lock()
            hot.name = "hot"
            warm.name = "warm"
            cold.name = "cold"
            for _ in 0..<1_000 {
                cold.lock()
                cold.unlock()
            }
            contendLock(warm, rounds: 5)
            contendLock(hot, rounds: 60)
            let profile = ContentionProfiling.snapshot()
            require(profile.sites.first?.lock == "\"hot\"", "first site is \(String(describing: profile.sites.first))")
            let hotSites = profile.sites.filter { $0.lock == "\"hot\"" }
            let hotWaits = hotSites.reduce(0) { $0 + $1.contendedAcquisitions }
            require(hotWaits == 60, "hot: \(hotWaits) waits recorded, 60 made")
            let warmWaits = waits(profile, lock: "\"warm\"")
            require(warmWaits == 5, "warm: \(warmWaits) waits recorded, 5 made")
            require(!profile.sites.contains { $0.lock.contains("cold") }, "the uncontended lock was reported")
            for site in hotSites {
                require(site.kind == "Lock", "kind \(site.kind)")
                require(
                    site.maxWait > .zero && site.totalWait >= site.maxWait, "waits \(site.totalWait), \(site.maxWait)")
                require(!site.backtrace.isEmpty, "no frames")
            }
            let holds = hotSites.reduce(0) { $0 + $1.holdsMeasured }
            require(holds == 60, "hot: \(holds) holds measured, 60 made")
            let waits = profile.sites.map(\.totalWait)
            require(waits == waits.sorted(by: >), "sites not sorted by total wait: \(waits)")
        }
        showChild(result)
    }

    @Test("INTERLOCK_CONTENTION=10 records about one contended wait in 10")
    func sampling() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("10")
            let lock = Lock()
            lock.name = "sampled"
            let rounds = 2_000
            contendLock(lock, rounds: rounds)
            let profile = ContentionProfiling.snapshot()
            require(profile.samplingPeriod == 10, "period \(profile.samplingPeriod)")
            let recorded = waits(profile, lock: "\"sampled\"")
            // Binomial(2000, 0.1): mean 200, standard deviation 13.4; five deviations either side.
            require((133...267).contains(recorded), "\(recorded) of \(rounds) recorded at 1 in 10")
            require(profile.report().contains("1 contended wait in 10"), "the report does not state the sampling")
        }
        showChild(result)
    }

    @Test("nothing is recorded when INTERLOCK_CONTENTION is unset")
    func unset() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention(nil)
            let lock = Lock()
            contendLock(lock, rounds: 20)
            require(!ContentionProfiling.isEnabled, "enabled without the variable")
            require(ContentionProfiling.snapshot().sites.isEmpty, "sites recorded while off")
        }
        showChild(result)
    }

    @Test("read and write waits of a ReadWriteLock are recorded apart")
    func readWriteSides() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let lock = ReadWriteLock()
            forceContention(
                rounds: 7, hold: { lock.lockWrite() }, release: { lock.unlockWrite() },
                worker: {
                    lock.lockRead()
                    lock.unlockRead()
                })
            forceContention(
                rounds: 4, hold: { lock.lockRead() }, release: { lock.unlockRead() },
                worker: {
                    lock.lockWrite()
                    lock.unlockWrite()
                })
            let profile = ContentionProfiling.snapshot()
            let reads = waits(profile, kind: "ReadWriteLock.read")
            let writes = waits(profile, kind: "ReadWriteLock.write")
            require(reads == 7, "\(reads) read waits recorded, 7 made")
            require(writes == 4, "\(writes) write waits recorded, 4 made")
            require(
                profile.sites.allSatisfy { $0.lock.hasPrefix("ReadWriteLock at 0x") },
                "lock \(profile.sites.map(\.lock))")
        }
        showChild(result)
    }

    @Test("Semaphore, WaitGroup, ConditionLock and BoundedChannel waits of threads are recorded")
    func threadWaits() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let semaphore = Semaphore(value: 0)
            forceContention(rounds: 3, hold: {}, release: { semaphore.signal() }, worker: { semaphore.wait() })
            let group = WaitGroup()
            forceContention(rounds: 2, hold: { group.enter() }, release: { group.leave() }, worker: { group.wait() })
            let conditionLock = ConditionLock(condition: 0)
            conditionLock.name = "phase"
            forceContention(
                rounds: 2, hold: {},
                release: {
                    conditionLock.lock()
                    conditionLock.unlock(withCondition: 1)
                },
                worker: {
                    conditionLock.lock(whenCondition: 1)
                    conditionLock.unlock(withCondition: 0)
                })
            let channel = BoundedChannel<Int>(capacity: 1)
            forceContention(rounds: 3, hold: {}, release: { try? channel.send(1) }, worker: { _ = channel.receive() })
            let profile = ContentionProfiling.snapshot()
            func count(_ kind: String) -> Int { waits(profile, kind: kind) }
            require(count("Semaphore") == 3, "Semaphore: \(count("Semaphore"))")
            require(count("WaitGroup") == 2, "WaitGroup: \(count("WaitGroup"))")
            require(count("ConditionLock.whenCondition") == 2, "ConditionLock: \(count("ConditionLock.whenCondition"))")
            require(count("BoundedChannel.receive") == 3, "BoundedChannel.receive: \(count("BoundedChannel.receive"))")
            require(
                site(profile, kind: "ConditionLock.whenCondition")?.lock == "\"phase\"",
                "ConditionLock's site: \(String(describing: site(profile, kind: "ConditionLock.whenCondition")))")
            require(
                site(profile, kind: "BoundedChannel.receive")?.lock.hasPrefix("BoundedChannel at 0x") == true,
                "channel's site: \(String(describing: site(profile, kind: "BoundedChannel.receive")))")
        }
        showChild(result)
    }

    @Test("task waits on a Semaphore and a WaitGroup are recorded")
    func taskWaits() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let semaphore = Semaphore(value: 0)
            for _ in 0..<5 {
                let waiter = Task { try await semaphore.wait() }
                spinUntil { semaphore._queuedSnapshot == 1 }
                semaphore.signal()
                _ = await waiter.result
            }
            let group = WaitGroup()
            for _ in 0..<3 {
                group.enter()
                let waiter = Task { try await group.wait() }
                spinUntil { group._taskWaitersSnapshot == 1 }
                group.leave()
                _ = await waiter.result
            }
            let profile = ContentionProfiling.snapshot()
            let semaphoreWaits = waits(profile, kind: "Semaphore.async")
            let groupWaits = waits(profile, kind: "WaitGroup.async")
            require(semaphoreWaits == 5, "Semaphore.async: \(semaphoreWaits) recorded, 5 made")
            require(groupWaits == 3, "WaitGroup.async: \(groupWaits) recorded, 3 made")
        }
        showChild(result)
    }

    @Test("a DistributedLock's lock(before:) that waited is recorded under its path")
    func distributedLockWaits() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let path = "/tmp/interlock-contention-dlock-\(getpid())"
            defer { unlink(path) }
            guard let holder = try? DistributedLock(path: path), let waiter = try? DistributedLock(path: path) else {
                require(false, "cannot create the locks at \(path)")
                return
            }
            forceContention(
                rounds: 2, hold: { require((try? holder.tryLock()) == true, "the holder's tryLock failed") },
                release: { require((try? holder.unlock()) != nil, "the holder's unlock failed") },
                worker: {
                    let taken = try? waiter.lock(before: .now + .seconds(30), pollInterval: .milliseconds(2))
                    require(taken == true, "the waiter did not get the lock")
                    require((try? waiter.unlock()) != nil, "the waiter's unlock failed")
                })
            let profile = ContentionProfiling.snapshot()
            let recorded = waits(profile, kind: "DistributedLock", lock: "\"\(path)\"")
            require(recorded == 2, "\(recorded) DistributedLock waits recorded, 2 made: \(profile.sites.map(\.lock))")
        }
        showChild(result)
    }

    @Test("a Lock taken after a wait and released by another thread ends its hold there")
    func crossThreadRelease() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let lock = Lock()
            lock.name = "handed"
            // Each round the worker takes the lock after a wait and keeps it; this thread
            // releases the worker's hold (a Lock has no owner) before taking it again.
            var workerHolds = false
            forceContention(
                rounds: 3,
                hold: {
                    if workerHolds { lock.unlock() }
                    workerHolds = true
                    lock.lock()
                },
                release: { lock.unlock() },
                worker: { lock.lock() })
            lock.unlock()
            let site = ContentionProfiling.snapshot().sites.first { $0.lock == "\"handed\"" }
            require(site?.contendedAcquisitions == 3, "waits: \(String(describing: site))")
            require(site?.holdsMeasured == 3, "holds measured across threads: \(String(describing: site))")
        }
        showChild(result)
    }

    @Test("the records of threads that have exited stay in the profile")
    func exitedThreads() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let lock = Lock()
            lock.name = "shared"
            // Each call's worker thread exits before the next starts.
            for _ in 0..<6 { contendLock(lock, rounds: 5) }
            let recorded = waits(ContentionProfiling.snapshot(), lock: "\"shared\"")
            require(recorded == 30, "\(recorded) recorded of 30 made by six exited threads")
        }
        showChild(result)
    }

    @Test("reset() forgets what was recorded")
    func reset() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let lock = Lock()
            contendLock(lock, rounds: 3)
            require(!ContentionProfiling.snapshot().sites.isEmpty, "nothing recorded before the reset")
            ContentionProfiling.reset()
            require(ContentionProfiling.snapshot().sites.isEmpty, "sites left after reset()")
            contendLock(lock, rounds: 2)
            let waits = ContentionProfiling.snapshot().sites.reduce(0) { $0 + $1.contendedAcquisitions }
            require(waits == 2, "\(waits) recorded after the reset, 2 made")
        }
        showChild(result)
    }

    @Test("a bad INTERLOCK_CONTENTION value traps, naming the variable")
    func badValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            setContention("often")
            _ = ContentionProfiling.isEnabled
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("INTERLOCK_CONTENTION=often"))
    }
}
#endif

#if INTERLOCK_CONTENTION
@Suite("Contention profiling: reports, hold warnings and the exit report")
struct ContentionReportTests {
    @Test("report() is a table by total wait with frames; foldedStacks() lines parse")
    func reportAndFolded() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention("1")
            let lock = Lock()
            lock.name = "table"
            contendLock(lock, rounds: 4)
            let rw = ReadWriteLock()
            forceContention(
                rounds: 2, hold: { rw.lockWrite() }, release: { rw.unlockWrite() },
                worker: {
                    rw.lockRead()
                    rw.unlockRead()
                })
            let profile = ContentionProfiling.snapshot()
            let report = profile.report()
            let lines = report.split(separator: "\n").map(String.init)
            require(
                lines.first?.hasPrefix("Interlock contention profile: ") == true, "first line: \(lines.first ?? "")")
            require(lines.first?.contains("2 sites") == true, "site count: \(lines.first ?? "")")
            require(
                lines.count > 2 && lines[1].contains("total wait") && lines[1].contains("held after"),
                "header: \(report)")
            let row = lines.first { $0.contains("\"table\"") }
            require(row != nil, "no row for the named lock in:\n\(report)")
            let cells = row!.split(separator: " ", omittingEmptySubsequences: true)
            require(cells.contains("4") && cells.contains("Lock"), "row: \(row!)")
            let frames = lines.drop { $0 != row! }.dropFirst().prefix { $0.hasPrefix("      ") }
            require(!frames.isEmpty, "no frames under the row in:\n\(report)")
            require(frames.first?.contains("Lock.lock()") == true, "first frame: \(frames.first ?? "")")

            let folded = profile.foldedStacks().split(separator: "\n").map(String.init)
            require(folded.count == 2, "folded lines: \(folded)")
            for line in folded {
                guard let space = line.lastIndex(of: " "), let micros = Int(line[line.index(after: space)...]) else {
                    require(false, "folded line without a count: \(line)")
                    return
                }
                let stack = line[..<space].split(separator: ";")
                require(micros >= 1 && stack.count >= 2, "folded line: \(line)")
                require(stack.last?.hasPrefix("[") == true && stack.last?.hasSuffix("]") == true, "lock frame: \(line)")
            }
            require(folded.contains { $0.contains(";[Lock \"table\"] ") }, "no folded line for the lock: \(folded)")
            require(
                folded.contains { $0.contains("[ReadWriteLock.read ReadWriteLock at 0x") }, "no read side: \(folded)")
        }
        showChild(result)
    }

    @Test("INTERLOCK_HOLD_WARN_MS: a long hold after a wait warns once per site, with both backtraces")
    func holdWarnings() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention(nil, holdWarnMilliseconds: 50)
            require(ContentionProfiling.isEnabled, "INTERLOCK_HOLD_WARN_MS alone does not switch recording on")
            let lock = Lock()
            lock.name = "slow"
            // Three contended acquisitions from one site, each held 80 ms (the hold being measured).
            forceContention(
                rounds: 3, hold: { lock.lock() }, release: { lock.unlock() },
                worker: {
                    lock.lock()
                    var pause = timespec(tv_sec: 0, tv_nsec: 80_000_000)
                    nanosleep(&pause, nil)
                    lock.unlock()
                })
            // And one short hold of another lock: no warning.
            let quick = Lock()
            quick.name = "quick"
            contendLock(quick, rounds: 3)
            let profile = ContentionProfiling.snapshot()
            let slow = profile.sites.first { $0.lock == "\"slow\"" }
            require(slow?.holdsMeasured == 3, "holds: \(String(describing: slow))")
            require((slow?.totalHoldAfterWait ?? .zero) >= .milliseconds(240), "held: \(String(describing: slow))")
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        showChild(result)
        let warnings = text.split(separator: "\n").filter { $0.hasPrefix("Interlock: Lock \"slow\" held ") }
        #expect(warnings.count == 1, "warnings: \(text)")
        #expect(text.contains("INTERLOCK_HOLD_WARN_MS=50"))
        #expect(text.contains("taken after a wait at:") && text.contains("released at:"))
        #expect(!text.contains("\"quick\""))
    }

    @Test("INTERLOCK_HOLD_WARN_MS: a holder that did not wait is reported at its release, once per release site")
    func holdWarningsForFreeHolders() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setContention(nil, holdWarnMilliseconds: 50)
            let lock = Lock()
            lock.name = "ledger"
            // This thread takes the lock freely each round and holds it 80 ms while the worker waits.
            forceContention(
                rounds: 3, hold: { lock.lock() },
                release: {
                    var pause = timespec(tv_sec: 0, tv_nsec: 80_000_000)
                    nanosleep(&pause, nil)
                    lock.unlock()
                },
                worker: {
                    lock.lock()
                    lock.unlock()
                })
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        showChild(result)
        let warnings = text.split(separator: "\n").filter {
            $0.hasPrefix("Interlock: Lock \"ledger\" was held while a waiter waited ")
        }
        #expect(warnings.count == 1, "warnings: \(text)")
        #expect(text.contains("the holder released it at:") && text.contains("Lock.unlock()"), "\(text)")
    }

    @Test("INTERLOCK_CONTENTION_REPORT=PATH writes the report and PATH.folded at exit, %p the process id")
    func exitReport() async throws {
        let prefix = "interlock-contention-report-\(getpid())-"
        await #expect(processExitsWith: .success) {
            // The parent's id names the files; "%p" adds the child's own.
            setContention("1", report: "/tmp/interlock-contention-report-\(getppid())-%p")
            let lock = Lock()
            lock.name = "at-exit"
            contendLock(lock, rounds: 3)
            exit(0)
        }
        let written = filesInTmp(prefix: prefix)
        defer { for name in written { unlink("/tmp/" + name) } }
        let reports = written.filter { !$0.hasSuffix(".folded") }
        try #require(reports.count == 1, "report files: \(written)")
        let childID = try #require(Int32(reports[0].dropFirst(prefix.count)), "not a process id: \(reports[0])")
        #expect(childID != getpid())
        let report = try #require(readWholeFile("/tmp/" + reports[0]))
        let folded = try #require(readWholeFile("/tmp/" + reports[0] + ".folded"))
        #expect(report.hasPrefix("Interlock contention profile: "))
        #expect(report.contains("\"at-exit\""))
        #expect(folded.contains("[Lock \"at-exit\"] "))
    }
}

/// The names of the entries of /tmp that start with `prefix`.
func filesInTmp(prefix: String) -> [String] {
    guard let directory = opendir("/tmp") else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        // Read the name in place, up to its NUL: a record is only as long as its name
        // (d_reclen), so copying the declared 256-byte d_name can run past the end of the
        // directory buffer's mapping (a crash seen in CI, in memcpy, with a crowded /tmp).
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let name = String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
        if name.hasPrefix(prefix) { names.append(name) }
    }
    return names
}

/// The contents of the file at `path`, or nil when it cannot be read.
func readWholeFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var text = ""
    var buffer = [CChar](repeating: 0, count: 4096)
    while fgets(&buffer, Int32(buffer.count), file) != nil {
        text += String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return text
}
#endif

#if INTERLOCK_CONTENTION
@Suite("Contention profiling: formatting")
struct ContentionFormattingTests {
    @Test("durations print with three significant digits, the unit chosen after rounding")
    func durations() {
        #expect(ContentionProfile._format(.nanoseconds(812)) == "812 ns")
        #expect(ContentionProfile._format(.nanoseconds(999)) == "999 ns")
        #expect(ContentionProfile._format(.nanoseconds(1_500_000)) == "1.50 ms")
        #expect(ContentionProfile._format(.nanoseconds(1_870_000)) == "1.87 ms")
        #expect(ContentionProfile._format(.nanoseconds(25_100_000)) == "25.1 ms")
        #expect(ContentionProfile._format(.nanoseconds(999_999)) == "1.00 ms")
        #expect(ContentionProfile._format(.nanoseconds(99_996)) == "100 µs")
        #expect(ContentionProfile._format(.nanoseconds(999_600_000)) == "1.00 s")
        #expect(ContentionProfile._format(.seconds(2_000)) == "2000 s")
    }

    @Test("folded frames lose their source location only when it is one")
    func foldedFrames() {
        #expect(ContentionProfile._withoutLocation("Service.lookup(_:) (main.swift:32)") == "Service.lookup(_:)")
        #expect(ContentionProfile._withoutLocation("f (x:)") == "f (x:)")
        #expect(ContentionProfile._withoutLocation("Lock.lock()") == "Lock.lock()")
        #expect(ContentionProfile._foldedFrame("a;b") == "a:b")
    }
}
#endif
