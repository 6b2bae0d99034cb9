// Condition: exclusion, predicate loops, signal and broadcast counts, timed waits.
//
// No sleep stands in for synchronization. To know that waiters are inside `wait`, each one
// increments `entered` under the lock just before waiting; the test takes the lock and reads
// `entered`: since a waiter holds the lock from its increment until `wait` releases it, once
// the test holds the lock and reads N, all N have released it inside `wait`.

import CInterlock
import Testing

@testable import Interlock

@Suite("Condition")
struct ConditionTests {
    @Test("a new condition is unlocked and unnamed; name can be set")
    func initialState() {
        let condition = Condition()
        #expect(condition.name == nil)
        condition.name = "jobs"
        #expect(condition.name == "jobs")
        #expect(condition.tryLock())
        #expect(!condition.tryLock())
        condition.unlock()
        condition.lock()
        condition.unlock()
        #expect(condition.tryLock())
        condition.unlock()
    }

    @Test("withLock returns the body's value and unlocks when the body throws")
    func withLock() {
        struct Failure: Error {}
        let condition = Condition()
        #expect(condition.withLock { 42 } == 42)
        #expect(throws: Failure.self) { try condition.withLock { throw Failure() } }
        #expect(condition.tryLock())
        condition.unlock()
    }

    @Test("signal and broadcast with nobody waiting do nothing")
    func signalWithoutWaiters() {
        let condition = Condition()
        condition.signal()
        condition.broadcast()
        condition.lock()
        condition.signal()
        condition.broadcast()
        condition.unlock()
        #expect(condition.tryLock())
        condition.unlock()
    }

    @Test("mutual exclusion: a plain counter incremented under the lock ends exact")
    func exclusion() {
        let condition = Condition()
        let counter = PlainShared(0)
        let threads = 4
        let perThread = TestScale.count(100_000, small: 2_000)
        runConcurrently(threadCount: threads) { _ in
            for _ in 0..<perThread {
                condition.lock()
                // Ten increments and a check, as ck's validator: a torn critical section shows.
                let before = counter.value
                for _ in 0..<10 { counter.value += 1 }
                precondition(counter.value == before + 10, "Condition: exclusion violated")
                counter.value -= 9
                condition.unlock()
            }
        }
        #expect(counter.value == threads * perThread)
    }

    @Test("predicate loop: a bounded buffer delivers every item exactly once, in order")
    func boundedBuffer() {
        let condition = Condition()
        let items = TestScale.count(50_000, small: 2_000)
        let capacity = 4
        let buffer = PlainShared([Int]())
        let received = PlainShared([Int]())
        let stalls = PlainShared(0)
        runConcurrently(threadCount: 2) { index in
            if index == 0 {
                for item in 0..<items {
                    condition.lock()
                    while buffer.value.count == capacity {
                        // Bounded, so that a lost wake-up fails the test instead of hanging it.
                        if !condition.wait(until: .now + conditionStallLimit) { stalls.value += 1 }
                    }
                    buffer.value.append(item)
                    condition.signal()
                    condition.unlock()
                }
            } else {
                for _ in 0..<items {
                    condition.lock()
                    while buffer.value.isEmpty {
                        if !condition.wait(until: .now + conditionStallLimit) { stalls.value += 1 }
                    }
                    received.value.append(buffer.value.removeFirst())
                    condition.signal()
                    condition.unlock()
                }
            }
        }
        #expect(received.value == Array(0..<items))
        #expect(buffer.value.isEmpty)
        #expect(stalls.value == 0, "a waiter slept \(conditionStallLimit) with its predicate true: lost wake-up")
    }

    @Test("each signal wakes at least one waiter: N tickets, N signals, N waiters return")
    func signalWakesOne() {
        let condition = Condition()
        let waiters = 4
        let entered = PlainShared(0)
        let tickets = PlainShared(0)
        let returned = PlainShared(0)
        let stalls = PlainShared(0)
        let threads = (0..<waiters).map { _ in
            TestThread {
                condition.lock()
                entered.value += 1
                while tickets.value == 0 {
                    // Bounded (twice the test's patience), so that a broken signal fails the
                    // test below instead of hanging it.
                    if !condition.wait(until: .now + conditionStallLimit * 2) { stalls.value += 1 }
                }
                tickets.value -= 1
                returned.value += 1
                condition.unlock()
            }
        }
        #expect(progresses { condition.withLock { entered.value == waiters } })
        for round in 1...waiters {
            condition.lock()
            tickets.value += 1
            condition.signal()
            condition.unlock()
            // A lost signal leaves the ticket unclaimed and `returned` stuck.
            #expect(
                progresses { condition.withLock { returned.value == round } },
                "signal \(round) woke nobody")
        }
        for thread in threads { thread.join() }
        #expect(returned.value == waiters)
        #expect(tickets.value == 0)
        #expect(stalls.value == 0, "a waiter timed out with a ticket available: lost signal")
    }

    @Test("a signal wakes a waiter that has stopped spinning and sleeps in the kernel")
    func signalReachesSleeper() {
        let condition = Condition()
        let ready = PlainShared(false)
        let woke = PlainShared(false)
        let stalls = PlainShared(0)
        let waiter = TestThread {
            condition.lock()
            while !ready.value {
                if !condition.wait(until: .now + conditionStallLimit * 2) { stalls.value += 1 }
            }
            woke.value = true
            condition.unlock()
        }
        // The waiter is asleep once it counts itself in `sleepers` (after its spin window).
        // Relaxed: a test observation of a counter only its waiters write.
        #expect(
            progresses { ilk_atomic_load_u32(condition._sleepers, ILK_ORDER_RELAXED) == 1 },
            "the waiter never went to sleep")
        condition.lock()
        ready.value = true
        condition.signal()
        condition.unlock()
        #expect(progresses { condition.withLock { woke.value } }, "the signal did not wake the sleeper")
        waiter.join()
        #expect(stalls.value == 0, "the waiter timed out with its predicate true: lost signal")
        #expect(ilk_atomic_load_u32(condition._sleepers, ILK_ORDER_RELAXED) == 0)
    }

    @Test("broadcast wakes every waiter", arguments: [true, false])
    func broadcastWakesAll(broadcastHoldingLock: Bool) {
        let condition = Condition()
        let waiters = TestScale.count(8, small: 4)
        let entered = PlainShared(0)
        let go = PlainShared(false)
        let returned = PlainShared(0)
        let threads = (0..<waiters).map { _ in
            TestThread {
                condition.lock()
                entered.value += 1
                while !go.value { condition.wait() }
                returned.value += 1
                condition.unlock()
            }
        }
        #expect(progresses { condition.withLock { entered.value == waiters } })
        condition.lock()
        go.value = true
        if broadcastHoldingLock {
            condition.broadcast()  // the requeue path: the waiters move onto the mutex
            condition.unlock()
        } else {
            condition.unlock()
            condition.broadcast()  // the path that wakes one and requeues the rest
        }
        let allReturned = progresses { condition.withLock { returned.value == waiters } }
        #expect(allReturned, "broadcast left waiters asleep")
        // A broken broadcast leaves the waiters blocked in the untimed wait(): leak them
        // rather than hang the test run.
        if allReturned { for thread in threads { thread.join() } }
        #expect(condition.withLock { returned.value } == waiters)
    }

    @Test("repeated broadcasts to rotating waiters never strand one")
    func repeatedBroadcasts() {
        // Waiters wait for a generation to advance; the main thread advances it and
        // broadcasts, alternately holding the lock and not. A waiter left on the mutex word
        // without a wake (a broken requeue) stalls its round.
        let condition = Condition()
        let waiters = 3
        let rounds = TestScale.count(2_000, small: 100)
        let generation = PlainShared(0)
        let seen = PlainShared(0)
        let threads = (0..<waiters).map { _ in
            TestThread {
                var mine = 0
                condition.lock()
                while mine < rounds {
                    while generation.value == mine { condition.wait() }
                    mine = generation.value
                    seen.value += 1
                    condition.broadcast()
                }
                condition.unlock()
            }
        }
        let stalls = PlainShared(0)
        for round in 1...rounds {
            condition.lock()
            while seen.value < (round - 1) * waiters {
                if !condition.wait(until: .now + conditionStallLimit) { stalls.value += 1; break }
            }
            if stalls.value > 0 {
                condition.unlock()
                break
            }
            generation.value = round
            if round % 2 == 0 {
                condition.broadcast()
                condition.unlock()
            } else {
                condition.unlock()
                condition.broadcast()
            }
        }
        let finished = stalls.value == 0 && progresses { condition.withLock { seen.value == rounds * waiters } }
        #expect(finished, "a round stalled: a waiter was stranded (\(stalls.value) stalls)")
        // A stranded waiter blocks in the untimed wait(): leak the threads rather than hang.
        if finished { for thread in threads { thread.join() } }
        #expect(condition.withLock { seen.value } == rounds * waiters)
    }

    @Test("wait(until:) times out: false, never early, not absurdly late, lock held again")
    func waitUntilTimesOut() {
        let condition = Condition()
        let timeout = Duration.milliseconds(50)
        condition.lock()
        let start = ContinuousClock.now
        let deadline = start + timeout
        let result = condition.wait(until: deadline)
        let end = ContinuousClock.now
        #expect(result == false)
        #expect(end >= deadline, "returned \(deadline - end) early")
        #expect(end - start < timeout + .seconds(5), "returned absurdly late: \(end - start)")
        expectHeldElsewhere(condition)
        condition.unlock()
    }

    @Test("wait(until:) with a deadline in the past returns false at once, still holding the lock")
    func waitUntilPast() {
        let condition = Condition()
        condition.lock()
        let start = ContinuousClock.now
        #expect(condition.wait(until: start - .seconds(1)) == false)
        #expect(condition.wait(until: start) == false)
        #expect(ContinuousClock.now - start < lockStallLimit, "it slept")  // generous: a hang, not a slow machine
        expectHeldElsewhere(condition)
        condition.unlock()
    }

    @Test("wait(until:) returns true when signalled before the deadline, holding the lock")
    func waitUntilSignalled() {
        let condition = Condition()
        let entered = PlainShared(false)
        let ready = PlainShared(false)
        let outcome = PlainShared<Bool?>(nil)
        let waiter = TestThread {
            condition.lock()
            entered.value = true
            var result = true
            let deadline = ContinuousClock.now + .seconds(60)
            while !ready.value && result { result = condition.wait(until: deadline) }
            // Still holding the lock here: this write is protected (TSan checks).
            outcome.value = result && ready.value
            condition.unlock()
        }
        #expect(progresses { condition.withLock { entered.value } })
        condition.withLock {
            ready.value = true
            condition.signal()
        }
        waiter.join()
        #expect(outcome.value == true)
    }

    /// Checks from another thread that `condition` is held (its tryLock fails).
    private func expectHeldElsewhere(_ condition: Condition, sourceLocation: SourceLocation = #_sourceLocation) {
        let tried = PlainShared<Bool?>(nil)
        let other = TestThread { tried.value = condition.tryLock() }
        other.join()
        #expect(tried.value == false, "the lock should be held by the waiter", sourceLocation: sourceLocation)
    }
}
