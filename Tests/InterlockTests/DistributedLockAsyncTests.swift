// Tests of DistributedLock's async lock(before:pollInterval:): it takes a free lock; it returns
// false at the deadline, not before, while another object holds the lock, and never pauses past
// the deadline; a non-positive poll interval means 1 ms; it takes the lock when the holder
// releases it during the wait; cancellation while it waits throws CancellationError and leaves
// the lock to others; an attempt that need not wait succeeds even in a cancelled task; it
// rethrows tryLock()'s errors; and a synchronous call still selects the blocking form.
//
// The test seam `_lock(before:pollInterval:beforePause:)` runs a closure just before each pause:
// the tests release the holder or cancel the task there, or count pauses, instead of sleeping.

import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("DistributedLock async", .timeLimit(.minutes(2)))
struct DistributedLockAsyncTests {
    @Test("takes a free lock at once")
    func acquiresAFreeLock() async throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let other = try DistributedLock(path: lock.path)
        var pauses = 0
        #expect(try await lock._lock(before: .now + .seconds(30), pollInterval: .milliseconds(10)) { pauses += 1 })
        #expect(pauses == 0)
        #expect(try lock.lockInfo()?.processID == getpid())
        #expect(try !other.tryLock())
        try lock.unlock()
        // The public form, and a past deadline: a try.
        #expect(try await lock.lock(before: .now - .seconds(1)))
        try lock.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test("false at the deadline, not before, while another object holds the lock")
    func falseAtTheDeadlineWhileHeld() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        let deadline = ContinuousClock.now + .milliseconds(60)
        #expect(try await !waiter.lock(before: deadline, pollInterval: .milliseconds(5)))
        #expect(ContinuousClock.now >= deadline)
        // A past deadline is a try: one attempt, no pause.
        var pauses = 0
        #expect(try await !waiter._lock(before: .now - .seconds(1), pollInterval: .milliseconds(5)) { pauses += 1 })
        #expect(pauses == 0)
        // The waiter holds nothing; the holder still holds the lock.
        #expect(throws: DistributedLockError.self) { try waiter.unlock() }
        #expect(try holder.lockInfo()?.processID == getpid())
        try holder.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test("no pause lasts past the deadline, whatever the poll interval")
    func noPausePastTheDeadline() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        // The pause is cut at the deadline, whatever the jitter draws.
        let now = ContinuousClock.now
        for _ in 0..<1000 {
            let pause = DistributedLock.pollPause(.seconds(60), before: now + .milliseconds(50), now: now)
            #expect(pause <= .milliseconds(50) && pause >= .zero)
        }
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(50)
        // A pause of the full interval would be 45-75 s. The bound is not tighter because the
        // wake-up needs a thread of the cooperative pool, which the suite's blocking tests can
        // keep busy for a long while: 24 s once, under ThreadSanitizer with every suite running.
        #expect(try await !waiter.lock(before: deadline, pollInterval: .seconds(60)))
        let end = ContinuousClock.now
        #expect(end >= deadline)
        #expect(end - start < .seconds(44), "returned after \(end - start): a pause ran past the deadline")
        try holder.unlock()
    }

    @Test("a non-positive poll interval means 1 ms, as in the blocking form")
    func nonPositivePollInterval() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        for interval in [Duration.zero, .milliseconds(-5)] {
            var pauses = 0
            let deadline = ContinuousClock.now + .milliseconds(40)
            #expect(try await !waiter._lock(before: deadline, pollInterval: interval) { pauses += 1 })
            #expect(ContinuousClock.now >= deadline)
            // Pauses of 0.75-1.25 ms: at most 40 / 0.75 + 1 of them (fewer on a busy machine);
            // an interval taken as zero would poll without pausing, thousands of times.
            #expect(pauses >= 1 && pauses <= 55, "interval \(interval): \(pauses) pauses in 40 ms")
        }
        try holder.unlock()
    }

    @Test("takes the lock when the holder releases it during the wait")
    func takesTheLockReleasedDuringTheWait() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        let paused = AtomicInt(0)
        let waiting = Task {
            try await waiter._lock(before: .now + .seconds(60), pollInterval: .milliseconds(2)) {
                paused.increment()
            }
        }
        // The waiter has failed an attempt and is pausing (or past its pause): release now.
        #expect(await eventually { paused.load() >= 1 })
        try holder.unlock()
        #expect(try await waiting.value)
        #expect(try waiter.lockInfo()?.processID == getpid())
        #expect(try !holder.tryLock())
        try waiter.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test("the holder releasing the lock just before a pause: taken by the next attempt")
    func releasedBeforeAPause() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        var pauses = 0
        let took = try await waiter._lock(before: .now + .seconds(60), pollInterval: .milliseconds(5)) {
            pauses += 1
            if pauses == 1 { #expect(throws: Never.self) { try holder.unlock() } }
        }
        #expect(took)
        #expect(pauses == 1)
        try waiter.unlock()
    }

    @Test("cancellation while waiting throws CancellationError and leaves the lock to others")
    func cancellationWhileWaiting() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        let other = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        let paused = AtomicInt(0)
        let start = ContinuousClock.now
        // Pauses of 45-75 minutes: only cancellation can end this call before the time limit.
        let waiting = Task {
            try await waiter._lock(before: .now + .seconds(7200), pollInterval: .seconds(3600)) {
                paused.increment()
            }
        }
        #expect(await eventually { paused.load() >= 1 })
        waiting.cancel()
        let result = await waiting.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(ContinuousClock.now - start < .seconds(60))
        #expect(paused.load() == 1)
        // The waiter holds nothing: once the holder releases, another object takes the lock.
        #expect(throws: DistributedLockError.self) { try waiter.unlock() }
        try holder.unlock()
        #expect(try other.tryLock())
        try other.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test("cancelled just as the lock becomes free: CancellationError, and the lock stays free")
    func cancelledAsTheLockIsReleased() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        let other = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        let waiting = Task {
            try await waiter._lock(before: .now + .seconds(60), pollInterval: .milliseconds(5)) {
                // Before the first pause: the lock becomes free and this task is cancelled.
                #expect(throws: Never.self) { try holder.unlock() }
                withUnsafeCurrentTask { $0?.cancel() }
            }
        }
        let result = await waiting.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(try waiter.lockInfo() == nil, "the cancelled waiter took the lock")
        #expect(try other.tryLock())
        try other.unlock()
    }

    @Test("an attempt that need not wait succeeds in a cancelled task; one that must wait throws")
    func cancelledTask() async throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        // Free lock: a try, even though the task is cancelled.
        let free = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await waiter.lock(before: .now + .seconds(60))
        }
        #expect(try await free.value)
        try waiter.unlock()
        // Held lock: it would have to wait.
        #expect(try holder.tryLock())
        let held = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await waiter.lock(before: .now + .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await held.value }
        // Held lock, deadline passed: false (there is no wait to cancel).
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await waiter.lock(before: .now - .seconds(1))
        }
        #expect(try await !late.value)
        try holder.unlock()
        #expect(try waiter.lockInfo() == nil)
    }

    @Test("rethrows what tryLock() throws")
    func rethrowsTryLockErrors() async throws {
        let directory = try DLTempDirectory()
        let subdirectory = directory.file("gone")
        #expect(mkdir(subdirectory, 0o755) == 0)
        let lock = try DistributedLock(path: subdirectory + "/l")
        #expect(rmdir(subdirectory) == 0)
        var expected: DistributedLockError.Code?
        do {
            _ = try lock.tryLock()
            Issue.record("tryLock succeeded in a removed directory")
        } catch let error as DistributedLockError {
            expected = error.code
        }
        do {
            _ = try await lock.lock(before: .now + .seconds(60))
            Issue.record("lock(before:) succeeded in a removed directory")
        } catch let error as DistributedLockError {
            #expect(error.code == expected)
            #expect(error.path == lock.path)
        }
    }

    @Test("a synchronous call still selects the blocking form")
    func synchronousCallSelectsTheBlockingForm() async throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        // In synchronous code only the blocking form can be called (this compiles without
        // `await`); it returns Bool, not a task's result.
        func blockingCall() throws -> Bool { try lock.lock(before: .now + .seconds(1)) }
        #expect(try blockingCall())
        try lock.unlock()
    }
}

/// Yields until `condition` holds (true), or a minute passes (false). Waits for something the
/// test can observe, not for time to pass.
private func eventually(_ condition: () -> Bool) async -> Bool {
    let limit = ContinuousClock.now + .seconds(60)
    while !condition() {
        if ContinuousClock.now >= limit { return false }
        await Task.yield()
    }
    return true
}
