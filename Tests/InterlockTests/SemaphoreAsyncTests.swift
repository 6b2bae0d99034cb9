// Semaphore in Swift concurrency: every promise of the async waits — a waiting task is suspended
// and resumed by a signal, far more waiting tasks than pool threads are all served, threads and
// tasks share one FIFO order, cancellation resumes at once holding no unit and passes a racing
// signal on, deadlines never fire early, withPermit signals back on return and on throw.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

/// Returns once `condition()` holds, yielding the task between polls (never blocking a pool
/// thread); `false` after `limit`.
func taskEventually(within limit: Duration = lockStallLimit, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        await Task.yield()
    }
    return true
}

@Suite("Semaphore, async")
struct SemaphoreAsyncTests {
    @Test("an async wait takes a free unit at once; a signal returns it")
    func uncontended() async throws {
        let semaphore = Interlock.Semaphore(value: 1)
        try await semaphore.wait()
        #expect(semaphore.value == 0)
        semaphore.signal()
        #expect(semaphore.value == 1)
        #expect(try await semaphore.wait(before: .now + .seconds(30)))
        #expect(semaphore.value == 0)
    }

    @Test("a waiting task is suspended in the queue until a signal resumes it")
    func taskWaitsForSignal() async throws {
        let semaphore = Interlock.Semaphore(value: 0)
        let done = AtomicBool(false)
        let waiter = Task {
            try await semaphore.wait()
            done.store(true)
        }
        #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
        #expect(!done.load())
        semaphore.signal()
        try await waiter.value
        #expect(done.load())
        #expect(semaphore.value == 0)
        #expect(semaphore._queuedSnapshot == 0)
    }

    @Test("far more waiting tasks than pool threads are all served, each by one signal")
    func poolStarvation() async throws {
        let tasks = TestScale.count(2_000, small: 300)
        let semaphore = Interlock.Semaphore(value: 0)
        let served = AtomicInt(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    try await semaphore.wait()
                    served.add(1)
                }
            }
            // Every task suspends (a blocking wait would have taken the pool's few threads and
            // hung here); then one signal each, from this task.
            #expect(await taskEventually { semaphore._queuedSnapshot == tasks })
            for _ in 0..<tasks { semaphore.signal() }
            try await group.waitForAll()
        }
        #expect(served.load() == tasks)
        #expect(semaphore.value == 0)
    }

    @Test("threads and tasks waiting on one semaphore are served in arrival order")
    func mixedWaitersFIFO() async throws {
        let semaphore = Interlock.Semaphore(value: 0)
        // Interlock's Lock, not Synchronization.Mutex: the Mutex's contended path is not
        // instrumented, and ThreadSanitizer reported the array as raced (a CI run).
        let order = LockedArray()
        let first = TestThread {
            semaphore.wait()
            order.withLock { $0.append("thread 1") }
        }
        #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
        let task = Task {
            try await semaphore.wait()
            order.withLock { $0.append("task") }
        }
        #expect(await taskEventually { semaphore._queuedSnapshot == 2 })
        let last = TestThread {
            semaphore.wait()
            order.withLock { $0.append("thread 2") }
        }
        #expect(await taskEventually { semaphore._queuedSnapshot == 3 })
        semaphore.signal()
        #expect(await taskEventually { order.withLock { $0.count == 1 } })
        semaphore.signal()
        try await task.value
        semaphore.signal()
        #expect(await taskEventually { order.withLock { $0.count == 3 } })
        first.join()
        last.join()
        #expect(order.withLock { $0 } == ["thread 1", "task", "thread 2"])
    }

    @Test("a task cancelled while waiting throws CancellationError at once, holding no unit")
    func cancelWhileWaiting() async throws {
        let semaphore = Interlock.Semaphore(value: 0)
        let waiter = Task { try await semaphore.wait() }
        #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(semaphore._queuedSnapshot == 0)
        #expect(semaphore.value == 0)
        // The next signal reaches a live waiter, not the cancelled one.
        let next = Task { try await semaphore.wait() }
        #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
        semaphore.signal()
        try await next.value
        #expect(semaphore.value == 0)
    }

    @Test("a task already cancelled throws without waiting, and holds no unit")
    func cancelledBeforeWaiting() async throws {
        let semaphore = Interlock.Semaphore(value: 0)
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await semaphore.wait()
        }
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(semaphore._queuedSnapshot == 0)
        semaphore.signal()
        #expect(semaphore.value == 1)
    }

    @Test("cancellation after a signal counted for the task: the task throws, the unit passes on")
    func cancelAfterSignalCounted() async throws {
        for withNextWaiter in [false, true] {
            let semaphore = Interlock.Semaphore(value: 0)
            let inHandOff = AtomicBool(false)
            let release = AtomicBool(false)
            semaphore._handOffHook = {
                inHandOff.store(true)
                while !release.load() { sched_yield() }
            }
            let cancelled = Task { try await semaphore.wait() }
            #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
            let nextDone = AtomicBool(false)
            let next =
                withNextWaiter
                ? Task {
                    try await semaphore.wait()
                    nextDone.store(true)
                } : nil
            if withNextWaiter { #expect(await taskEventually { semaphore._queuedSnapshot == 2 }) }
            // The signal counts (matching the first waiter), then stalls before its hand-off.
            let signaller = TestThread { semaphore.signal() }
            #expect(await taskEventually { inHandOff.load() })
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            release.store(true)
            signaller.join()
            if let next {
                // The unit went to the next waiter (bounded: a lost unit fails, not hangs).
                #expect(await taskEventually(within: .seconds(10)) { nextDone.load() })
                if !nextDone.load() { semaphore.signal() }
                try await next.value
                #expect(semaphore.value == 0)
            } else {
                #expect(semaphore.value == 1)  // no waiter left: the unit is free
            }
            #expect(semaphore._queuedSnapshot == 0)
        }
    }

    @Test("cancellation racing a signal: the unit is taken by the task or stays free, never lost")
    func cancellationRacesSignal() async throws {
        let rounds = TestScale.count(3_000, small: 300)
        var granted = 0
        for round in 0..<rounds {
            let semaphore = Interlock.Semaphore(value: 0)
            let waiter = Task { () -> Bool in
                do {
                    try await semaphore.wait()
                    return true
                } catch {
                    return false
                }
            }
            #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
            // One round in four in a fixed order, so that each outcome must occur: the signal
            // first (the queued task is served, and the cancellation after it changes nothing),
            // or the cancellation first (the task leaves holding nothing, the unit stays free).
            // The other rounds race the two.
            let order = round % 8
            let signaller: TestThread?
            if order == 0 {
                semaphore.signal()
                signaller = nil
            } else if order == 4 {
                waiter.cancel()
                #expect(await waiter.value == false, "round \(round): a cancelled queued wait took a unit")
                signaller = TestThread { semaphore.signal() }
            } else {
                signaller = TestThread { semaphore.signal() }
            }
            waiter.cancel()
            let took = await waiter.value
            signaller?.join()
            if order == 0 { #expect(took, "round \(round): the signal came first, but the task was not served") }
            if took { granted += 1 }
            // Units conserved: the one signalled unit is held by the task or free.
            #expect(semaphore.value + (took ? 1 : 0) == 1)
            #expect(semaphore._queuedSnapshot == 0)
        }
        // Both outcomes occurred (the ordered rounds force each); none lost the unit.
        #expect(granted > 0 && granted < rounds, "\(granted) of \(rounds) rounds served")
    }

    @Test("a timed async wait never returns false before its deadline and holds nothing then")
    func deadlineNeverEarly() async throws {
        let semaphore = Interlock.Semaphore(value: 0)
        for milliseconds in [1, 5, 20] {
            let deadline = ContinuousClock.now + .milliseconds(milliseconds)
            let took = try await semaphore.wait(before: deadline)
            #expect(!took)
            #expect(ContinuousClock.now >= deadline)
            #expect(semaphore._queuedSnapshot == 0)
            #expect(semaphore.value == 0)
        }
        // A deadline already passed is a tryWait.
        #expect(!(try await semaphore.wait(before: .now - .seconds(1))))
        semaphore.signal()
        #expect(try await semaphore.wait(before: .now - .seconds(1)))
    }

    @Test("a timed async wait takes a unit signalled before its deadline")
    func deadlineSignalled() async throws {
        let semaphore = Interlock.Semaphore(value: 0)
        let waiter = Task { try await semaphore.wait(before: .now + .seconds(60)) }
        #expect(await taskEventually { semaphore._queuedSnapshot == 1 })
        semaphore.signal()
        #expect(try await waiter.value)
        #expect(semaphore.value == 0)
    }

    @Test("withPermit holds a unit for the body and signals it back on return and on throw")
    func withPermit() async throws {
        struct Failure: Error {}
        let semaphore = Interlock.Semaphore(value: 2)
        let seen = try await semaphore.withPermit { semaphore.value }
        #expect(seen == 1)
        #expect(semaphore.value == 2)
        await #expect(throws: Failure.self) {
            try await semaphore.withPermit { throw Failure() }
        }
        #expect(semaphore.value == 2)
    }

    @Test("withPermit bounds the tasks inside the body by the semaphore's value")
    func withPermitBounds() async throws {
        let semaphore = Interlock.Semaphore(value: 3)
        let inside = AtomicInt(0)
        let most = AtomicInt(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    try await semaphore.withPermit {
                        let now = inside.add(1)
                        var seen = most.load()
                        while now > seen && !most.compareAndSwap(seen, now) { seen = most.load() }
                        await Task.yield()
                        inside.subtract(1)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(most.load() <= 3)
        #expect(most.load() >= 1)
        #expect(semaphore.value == 3)
    }
}

/// Strings appended and read under Interlock's `Lock` (which ThreadSanitizer sees through).
private final class LockedArray: @unchecked Sendable {
    // @unchecked: `items` is touched only under `lock`.
    private let lock = Interlock.Lock()
    private var items: [String] = []

    func withLock<R>(_ body: (inout [String]) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&items)
    }
}
