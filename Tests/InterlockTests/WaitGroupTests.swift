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

    // Regression: the leave that reached zero used to clear WAITING and advance the epoch
    // after its decrement; an enter() and a wait() of the next cycle that slipped in between
    // saw the epoch move and returned while the new task was still running (the 4-thread
    // fork-join benchmark hung on the drifted count).
    @Test("a wait of the next cycle does not end at the previous cycle's zero while its last leave is stalled")
    func nextCycleWaitIgnoresStalledZero() {
        let group = WaitGroup()
        let stalled = AtomicBool(false), resume = AtomicBool(false)
        group._zeroProcessingHook = {
            stalled.store(true)
            while !resume.load() { ilk_thread_yield() }
        }
        group.enter()
        // A waiter of the first cycle, asleep, so that WAITING is set when the count reaches 0.
        let firstTid = AtomicUInt32(0)
        let first = TestThread {
            firstTid.store(ilk_current_thread_id())
            group.wait()
        }
        #expect(lockEventually { firstTid.load() != 0 && threadState(Int32(firstTid.load())) == "S" })
        // The first cycle's last leave stops between its decrement and waking the waiter.
        let leaver = TestThread { group.leave() }
        #expect(lockEventually { stalled.load() })
        // The next cycle, on another thread: enter, then a timed wait that must time out,
        // since its task never leaves before the deadline.
        let secondTid = AtomicUInt32(0)
        let entered = AtomicBool(false)
        let outcome = AtomicInt(0)  // 1: the wait returned true, 2: it timed out
        let second = TestThread {
            group.enter()
            entered.store(true)
            secondTid.store(ilk_current_thread_id())
            outcome.store(group.wait(before: .now + .milliseconds(300)) ? 1 : 2)
        }
        // Let the second thread get as far as it can while the leave is stalled (asleep in its
        // wait, or held in enter() until the zero is processed) before the leave goes on.
        _ = lockEventually(within: .seconds(2)) {
            entered.load() && secondTid.load() != 0 && threadState(Int32(secondTid.load())) == "S"
        }
        resume.store(true)
        leaver.join()
        first.join()
        second.join()
        #expect(outcome.load() == 2, "a wait of the second cycle returned true while its task had not left")
        #expect(group.count == 1)
        group.leave()
        #expect(group.count == 0)
        group.wait()
    }

    @Test("fork-join rounds with one waiter and three tasks: every wait ends after its round's three leaves")
    func forkJoinRounds() {
        let group = WaitGroup()
        let rounds = 20_000
        let generation = AtomicInt(0)
        let leaves = AtomicInt(0)
        let tasks = (0..<3).map { _ in
            TestThread {
                var seen = 0
                while seen < rounds {
                    let now = generation.load(ordering: .acquire)
                    if now == seen { ilk_thread_yield(); continue }
                    seen += 1
                    leaves.increment()
                    group.leave()
                }
            }
        }
        var early = 0
        for round in 1...rounds {
            group.enter(3)
            generation.store(round, ordering: .release)
            // Bounded: a lost wake-up fails here instead of hanging the run.
            let done = group.wait(before: .now + .seconds(30))
            #expect(done, "round \(round): wait timed out")
            if !done { break }
            if leaves.load() != 3 * round { early += 1 }
        }
        for task in tasks { task.join() }
        #expect(early == 0, "\(early) waits returned before their round's three leaves")
    }

    @Test("leave() without a matching enter() traps with a message")
    func leaveWithoutEnterTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let group = WaitGroup()
            group.enter()
            group.leave()
            group.leave()
        }
        expectTrapMessage(result, contains: "WaitGroup", "leave() called more times than enter()")
    }

    @Test("enter(0) traps with a message")
    func enterZeroTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            WaitGroup().enter(0)
        }
        expectTrapMessage(result, contains: "WaitGroup", "enter(0) with a count below 1")
    }
}
