// Stress workload `distributed-lock-processes`: several processes take one DistributedLock in
// the run's directory (`--directory`, so that it can be pointed at an NFS mount) for the whole
// run, and check that they exclude each other.
//
// Each worker thread of the parent starts one child process (the harness itself, `--child
// distributed-lock-processes`) and waits for it. Until the deadline, a child takes the lock
// with lock(before:) (polling 200 µs), and inside it:
//   1. creates the marker file "inside" with O_CREAT|O_EXCL - EEXIST means another holder is
//      inside too;
//   2. reads the shared counter file, yields, writes the value + 1 back - a non-atomic
//      read-modify-write, so overlapping holders lose increments;
//   3. removes the marker, and unlocks.
// The child prints "acquisitions=N violations=M" and a few latency samples (ns from the call
// to lock until unlock returned) on its standard output.
//
// Invariants: no child saw the marker taken; the counter equals the sum of the children's
// acquisitions; every child exits 0; the lock and the marker are gone at the end.

import Foundation
import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Workload {
    /// `distributed-lock-processes`; see the file comment.
    static let distributedLockProcesses = Workload(
        name: "distributed-lock-processes",
        summary: "DistributedLock taken by one child process per thread in --directory; exclusive, exact counter",
        latencySampleInterval: 1,
        child: distributedLockChild
    ) { context in
        let directory = try context.directory
        let results = context.runThreads {
            worker -> (acquisitions: Int, violations: Int, status: Int32, output: String) in
            let child: ChildProcess
            do {
                child = try context.spawnChild()
            } catch {
                context.fail("thread \(worker.index): \(error)")
                return (0, 0, -1, "")
            }
            let (status, output) = child.wait()
            var acquisitions = 0, violations = 0
            for field in output.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
                let parts = field.split(separator: "=")
                guard parts.count == 2, let value = Int(parts[1]) else { continue }
                switch parts[0] {
                case "acquisitions": acquisitions = value
                case "violations": violations = value
                case "latency": worker.record(latency: UInt64(value))
                default: break
                }
            }
            worker.count(acquisitions)
            return (acquisitions, violations, status, output)
        }
        for (index, result) in results.enumerated() {
            context.check(result.status == 0, "child \(index) exited with status \(result.status): \(result.output)")
            context.check(
                result.violations == 0, "child \(index) found another holder inside \(result.violations) times")
        }
        let total = results.reduce(0) { $0 + $1.acquisitions }
        let counter = (try? String(contentsOfFile: directory + "/counter", encoding: .utf8)).flatMap { Int($0) } ?? 0
        context.check(
            counter == total, "the shared counter reads \(counter) after \(total) acquisitions: holders overlapped")
        context.check(total > 0, "no child ever took the lock")
        context.check(access(directory + "/lock", F_OK) != 0, "the lock is still held after every child finished")
        context.check(
            access(directory + "/inside", F_OK) != 0, "the marker is still present after every child finished")
        context.note("processes", results.count)
        context.note("acquisitions", total)
    }

    /// The child side: take the lock until the deadline, checking exclusion inside.
    @Sendable
    static func distributedLockChild(_ invocation: ChildInvocation) throws -> Int32 {
        let lock = try DistributedLock(path: invocation.directory + "/lock")
        let marker = invocation.directory + "/inside", counterPath = invocation.directory + "/counter"
        let deadline = ContinuousClock.now + .seconds(invocation.seconds)
        var acquisitions = 0, violations = 0
        var latencies: [UInt64] = []
        while ContinuousClock.now < deadline {
            let start = ContinuousClock.now
            guard try lock.lock(before: deadline, pollInterval: .microseconds(200)) else { break }
            let fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd < 0 { violations += 1 } else { close(fd) }
            let value = (try? String(contentsOfFile: counterPath, encoding: .utf8)).flatMap { Int($0) } ?? 0
            sched_yield()
            try String(value + 1).write(toFile: counterPath, atomically: false, encoding: .utf8)
            if fd >= 0 { unlink(marker) }
            try lock.unlock()
            acquisitions += 1
            if latencies.count < 256 { latencies.append(UInt64((ContinuousClock.now - start).nanoseconds)) }
        }
        print(
            "acquisitions=\(acquisitions) violations=\(violations)",
            latencies.map { "latency=\($0)" }.joined(separator: " "))
        return 0
    }
}
