// WaitGroup: every promise of its documentation — wait returns only once every enter has been
// matched by a leave (and sees the tasks' work), timed waits never time out early, a group is
// reusable after zero, notify bodies run exactly once (at once at zero, else on the thread of
// the leave that reaches zero), and the traps on misuse.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("WaitGroup")
struct WaitGroupTests {
    @Test("count follows enter and leave; wait returns at once at zero")
    func countAndImmediateWait() {
        let group = WaitGroup()
        #expect(group.count == 0)
        group.wait()
        #expect(group.wait(before: .now - .seconds(1)))
        group.enter()
        group.enter(3)
        #expect(group.count == 4)
        for _ in 0..<4 { group.leave() }
        #expect(group.count == 0)
        group.wait()
    }

    @Test("wait sleeps until the last leave, and sees every task's work")
    func waitUntilLastLeave() {
        let group = WaitGroup()
        let tasks = 4
        let results = UnsafeMutableBufferPointer<Int>.allocate(capacity: tasks)
        results.initialize(repeating: 0)
        defer { results.deallocate() }
        nonisolated(unsafe) let shared = results
        group.enter(tasks)
        let waiterTid = AtomicUInt32(0)
        let returned = AtomicBool(false)
        let waiter = TestThread {
            waiterTid.store(ilk_current_thread_id())
            group.wait()
            returned.store(true)
            // Plain reads: ordered only by the group.
            #expect(Array(shared) == (0..<tasks).map { $0 * 10 + 1 })
        }
        #expect(lockEventually { waiterTid.load() != 0 && threadState(Int32(waiterTid.load())) == "S" })
        let release = StartBarrier(count: tasks)
        let workers = (0..<tasks).map { index in
            TestThread {
                release.wait()
                shared[index] = index * 10 + 1
                group.leave()
            }
        }
        for worker in workers { worker.join() }
        // Bounded: a lost wake-up fails here instead of hanging the run.
        #expect(lockEventually { returned.load() }, "wait() did not return after the last leave")
        if returned.load() { waiter.join() }
        #expect(group.count == 0)
    }

    @Test("wait does not return while one task is still in progress")
    func waitHoldsForLastTask() {
        let group = WaitGroup()
        group.enter(2)
        group.leave()
        let returned = AtomicBool(false)
        let tid = AtomicUInt32(0)
        let waiter = TestThread {
            tid.store(ilk_current_thread_id()); group.wait(); returned.store(true)
        }
        #expect(lockEventually { tid.load() != 0 && threadState(Int32(tid.load())) == "S" })
        #expect(!returned.load())
        group.leave()
        #expect(lockEventually { returned.load() }, "wait() did not return after the last leave")
        if returned.load() { waiter.join() }
    }

    @Test("wait(before:) times out no earlier than its deadline; true once the count reaches zero")
    func timedWait() {
        let group = WaitGroup()
        group.enter()
        expectTimedOut(timedAttemptOnAnotherThread(after: .milliseconds(30)) { group.wait(before: $0) })
        let result = AtomicInt(-1)
        let waiter = TestThread { result.store(group.wait(before: .now + .seconds(60)) ? 1 : 0) }
        group.leave()
        #expect(lockEventually { result.load() != -1 })
        if result.load() != -1 { waiter.join() }
        #expect(result.load() == 1)
    }

    @Test("a group is reusable after it reaches zero")
    func reusable() {
        let group = WaitGroup()
        for round in 0..<TestScale.count(200, small: 20) {
            let done = AtomicInt(0)
            group.enter(2)
            let workers = (0..<2).map { _ in
                TestThread {
                    _ = done.increment(); group.leave()
                }
            }
            // Bounded: a lost wake-up fails the test instead of hanging the run.
            guard group.wait(before: .now + lockStallLimit) else {
                Issue.record("round \(round): wait did not return after both leaves")
                return
            }
            #expect(done.load() == 2, "round \(round): wait returned before both leaves")
            for worker in workers { worker.join() }
        }
    }

    @Test("notify at zero runs at once on the calling thread")
    func notifyAtZero() {
        let group = WaitGroup()
        let ranOn = AtomicUInt32(0)
        group.notify { ranOn.store(ilk_current_thread_id()) }
        #expect(ranOn.load() == ilk_current_thread_id())
    }

    @Test("notify bodies run exactly once each, on the thread whose leave reaches zero")
    func notifyOnLastLeave() {
        let group = WaitGroup()
        group.enter(2)
        let runs = AtomicInt(0)
        let ranOn = AtomicUInt32(0)
        for _ in 0..<3 {
            group.notify {
                _ = runs.increment(); ranOn.store(ilk_current_thread_id())
            }
        }
        #expect(runs.load() == 0)
        group.leave()
        #expect(runs.load() == 0)
        let leaverTid = AtomicUInt32(0)
        TestThread {
            leaverTid.store(ilk_current_thread_id()); group.leave()
        }.join()
        #expect(runs.load() == 3)
        #expect(ranOn.load() == leaverTid.load())
        // Nothing is left listed: another round runs nothing twice.
        group.enter()
        group.leave()
        #expect(runs.load() == 3)
    }

    @Test("notify racing the last leave: every body runs exactly once")
    func notifyRaces() {
        let rounds = TestScale.count(2_000, small: 200)
        for _ in 0..<rounds {
            let group = WaitGroup()
            let runs = AtomicInt(0)
            group.enter(2)
            runConcurrently(threadCount: 3) { index in
                if index == 2 {
                    group.notify { _ = runs.increment() }
                    group.notify { _ = runs.increment() }
                } else {
                    group.leave()
                }
            }
            #expect(runs.load() == 2)
        }
    }

    @Test("leave() without a matching enter() traps with a message")
    func leaveWithoutEnterTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let group = WaitGroup()
            group.enter()
            group.leave()
            group.leave()
        }
        expectLockTrapMessage(result, contains: "WaitGroup", "leave() called more times than enter()")
    }

    @Test("enter(0) traps with a message")
    func enterZeroTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            WaitGroup().enter(0)
        }
        expectLockTrapMessage(result, contains: "WaitGroup", "enter(0) with a count below 1")
    }
}
