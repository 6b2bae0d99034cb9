// WaitGroup in Swift concurrency: an async wait suspends the task until the count is zero (never
// before), far more waiting tasks than pool threads are all resumed by one zero, threads and
// tasks wait together, cancellation resumes at once and leaves nothing listed, deadlines never
// fire early.

import Testing

@testable import Interlock

@Suite("WaitGroup, async")
struct WaitGroupAsyncTests {
    @Test("an async wait on a zero count returns at once")
    func zeroReturnsAtOnce() async throws {
        let group = WaitGroup()
        try await group.wait()
        #expect(try await group.wait(before: .now + .seconds(30)))
        #expect(group._taskWaitersSnapshot == 0)
    }

    @Test("an async wait returns only after the last leave, and sees the tasks' work")
    func waitsForLastLeave() async throws {
        let group = WaitGroup()
        let work = AtomicInt(0)
        group.enter(3)
        let waiter = Task { () -> Int in
            try await group.wait()
            return work.load()
        }
        #expect(await taskEventually { group._taskWaitersSnapshot == 1 })
        for _ in 0..<3 {
            let thread = TestThread {
                work.add(1)
                group.leave()
            }
            thread.join()
            if group.count > 0 { #expect(group._taskWaitersSnapshot == 1) }
        }
        #expect(try await waiter.value == 3)
        #expect(group._taskWaitersSnapshot == 0)
    }

    @Test("one zero resumes far more waiting tasks than pool threads, and threads waiting too")
    func manyTasksAndThreads() async throws {
        let tasks = TestScale.count(2_000, small: 300)
        let group = WaitGroup()
        group.enter()
        let resumed = AtomicInt(0)
        let threadDone = AtomicBool(false)
        let thread = TestThread {
            group.wait()
            threadDone.store(true)
        }
        try await withThrowingTaskGroup(of: Void.self) { tasksGroup in
            for _ in 0..<tasks {
                tasksGroup.addTask {
                    try await group.wait()
                    resumed.add(1)
                }
            }
            #expect(await taskEventually { group._taskWaitersSnapshot == tasks })
            #expect(resumed.load() == 0)
            group.leave()
            try await tasksGroup.waitForAll()
        }
        thread.join()
        #expect(threadDone.load())
        #expect(resumed.load() == tasks)
    }

    @Test("a task cancelled while waiting throws at once and leaves nothing listed")
    func cancelWhileWaiting() async throws {
        let group = WaitGroup()
        group.enter()
        let waiter = Task { try await group.wait() }
        let other = Task { try await group.wait() }
        #expect(await taskEventually { group._taskWaitersSnapshot == 2 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(group._taskWaitersSnapshot == 1)
        group.leave()
        try await other.value  // the other waiter is still served by the zero
        #expect(group._taskWaitersSnapshot == 0)
        // The group is reusable after the abandoned wait.
        group.enter()
        let again = Task { try await group.wait() }
        #expect(await taskEventually { group._taskWaitersSnapshot == 1 })
        group.leave()
        try await again.value
    }

    @Test("cancellation racing the zero: the task returns or throws, once, and nothing stays listed")
    func cancellationRacesZero() async throws {
        for _ in 0..<TestScale.count(2_000, small: 200) {
            let group = WaitGroup()
            group.enter()
            let waiter = Task { () -> Bool in
                do {
                    try await group.wait()
                    return true
                } catch {
                    return false
                }
            }
            #expect(await taskEventually { group._taskWaitersSnapshot == 1 })
            let leaver = TestThread { group.leave() }
            waiter.cancel()
            _ = await waiter.value
            leaver.join()
            #expect(group._taskWaitersSnapshot == 0)
            #expect(group.count == 0)
        }
    }

    @Test("a timed async wait never returns false before its deadline")
    func deadlineNeverEarly() async throws {
        let group = WaitGroup()
        group.enter()
        for milliseconds in [1, 5, 20] {
            let deadline = ContinuousClock.now + .milliseconds(milliseconds)
            #expect(!(try await group.wait(before: deadline)))
            #expect(ContinuousClock.now >= deadline)
            #expect(group._taskWaitersSnapshot == 0)
        }
        group.leave()
        #expect(try await group.wait(before: .now - .seconds(1)))
    }
}
