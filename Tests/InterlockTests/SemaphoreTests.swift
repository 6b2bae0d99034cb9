// Semaphore: every promise of its documentation — units counted exactly, a signal wakes exactly
// one sleeper and in arrival order, timed waits never time out early and never lose a unit when
// they withdraw, at most `value` holders at once, a signal publishes the signaller's writes, and
// the trap on a negative initial value.
//
// Glibc's overlay also declares a `Semaphore` (a typealias of UnsafeMutablePointer<sem_t>), so a
// file that imports Glibc (or Foundation, which re-exports it) names this one Interlock.Semaphore.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("Semaphore")
struct SemaphoreTests {
    @Test("value counts units: the initial value, minus waits, plus signals; never negative")
    func valueCounts() {
        let semaphore = Interlock.Semaphore(value: 2)
        #expect(semaphore.value == 2)
        semaphore.wait()
        #expect(semaphore.value == 1)
        #expect(semaphore.tryWait())
        #expect(semaphore.value == 0)
        #expect(!semaphore.tryWait())
        #expect(semaphore.value == 0)
        semaphore.signal()
        semaphore.signal()
        semaphore.signal()
        #expect(semaphore.value == 3)
    }

    @Test("a waiter sleeps until a signal; value reads 0, not negative, while it waits")
    func waiterSleepsUntilSignal() {
        let semaphore = Interlock.Semaphore(value: 0)
        let done = AtomicBool(false)
        let tid = AtomicUInt32(0)
        let waiter = TestThread {
            tid.store(ilk_current_thread_id())
            semaphore.wait()
            done.store(true)
        }
        #expect(lockEventually { tid.load() != 0 && threadState(Int32(tid.load())) == "S" })
        #expect(!done.load())
        #expect(semaphore.value == 0)
        semaphore.signal()
        #expect(lockEventually { done.load() })
        if done.load() { waiter.join() }
        #expect(semaphore.value == 0)
    }

    @Test("a signal with sleepers wakes exactly one, the one that waited longest")
    func signalWakesOneInOrder() {
        let semaphore = Interlock.Semaphore(value: 0)
        let order = LockGuarded<[Int]>([])
        let orderLock = Lock()
        var threads: [TestThread] = []
        for index in 0..<3 {
            threads.append(
                TestThread {
                    semaphore.wait()
                    orderLock.withLock { order.value.append(index) }
                })
            // Queued in this order: each waiter is listed before the next one starts.
            #expect(lockEventually { semaphore._queuedSnapshot == index + 1 })
        }
        for served in 1...3 {
            semaphore.signal()
            #expect(lockEventually { orderLock.withLock { order.value.count } == served })
            // Exactly one more returned; the others are still queued.
            #expect(semaphore._queuedSnapshot == 3 - served)
            #expect(orderLock.withLock { order.value.count } == served)
        }
        guard orderLock.withLock({ order.value.count }) == 3 else { return }  // failed above; do not hang
        for thread in threads { thread.join() }
        #expect(order.value == [0, 1, 2])
        #expect(semaphore.value == 0)
    }

    @Test("wait(before:) times out no earlier than its deadline and takes no unit")
    func timedWaitTimesOut() {
        let semaphore = Interlock.Semaphore(value: 0)
        let outcome = timedAttemptOnAnotherThread(after: .milliseconds(30)) { semaphore.wait(before: $0) }
        expectTimedOut(outcome)
        #expect(semaphore.value == 0)
        #expect(semaphore._queuedSnapshot == 0)
        semaphore.signal()
        #expect(semaphore.value == 1, "the withdrawn waiter must not keep a claim on the next unit")
    }

    @Test("wait(before:) with a deadline already passed is a tryWait")
    func timedWaitPastDeadline() {
        let semaphore = Interlock.Semaphore(value: 1)
        #expect(semaphore.wait(before: .now - .seconds(1)))
        #expect(!semaphore.wait(before: .now - .seconds(1)))
        #expect(semaphore.value == 0)
    }

    @Test("wait(before:) returns true when a signal comes before the deadline")
    func timedWaitSignalled() {
        let semaphore = Interlock.Semaphore(value: 0)
        let result = AtomicInt(-1)
        let waiter = TestThread { result.store(semaphore.wait(before: .now + .seconds(60)) ? 1 : 0) }
        #expect(lockEventually { semaphore._queuedSnapshot == 1 })
        semaphore.signal()
        #expect(lockEventually { result.load() != -1 })
        if result.load() != -1 { waiter.join() }
        #expect(result.load() == 1)
        #expect(semaphore.value == 0)
    }

    @Test("never more holders than units, and no unit lost or made, with timed waiters withdrawing")
    func boundedHoldersNoLostUnit() {
        let units = 2
        let semaphore = Interlock.Semaphore(value: units)
        let holders = AtomicInt(0)
        let maxHolders = AtomicInt(0)
        let taken = AtomicInt(0)
        let rounds = TestScale.count(20_000, small: 1_000)
        runConcurrently(threadCount: 6) { index in
            for round in 0..<rounds {
                let got: Bool
                if (index + round) % 3 == 0 {
                    got = semaphore.wait(before: .now + .microseconds(Int64(round % 50)))
                } else {
                    semaphore.wait()
                    got = true
                }
                guard got else { continue }
                let now = holders.increment()
                var seen = maxHolders.load()
                while now > seen, !maxHolders.compareAndSwap(seen, now) { seen = maxHolders.load() }
                _ = taken.increment()
                _ = holders.decrement()
                semaphore.signal()
            }
        }
        #expect(maxHolders.load() <= units && maxHolders.load() >= 1)
        #expect(taken.load() > 0)
        #expect(semaphore.value == units, "units were lost or made")
        #expect(semaphore._queuedSnapshot == 0)
    }

    @Test("a producer/consumer hand-off delivers every item once, in order, with its data")
    func handOffPublishes() {
        let items = TestScale.count(50_000, small: 2_000)
        let filled = Interlock.Semaphore(value: 0)
        let empty = Interlock.Semaphore(value: 1)
        let slot = LockGuarded<Int>(0)  // plain: only the semaphores order it
        let received = LockGuarded<[Int]>([])
        let consumer = TestThread {
            for _ in 0..<items {
                filled.wait()
                received.value.append(slot.value)
                empty.signal()
            }
        }
        for item in 0..<items {
            empty.wait()
            slot.value = item
            filled.signal()
        }
        consumer.join()
        #expect(received.value == Array(0..<items))
    }

    @Test("Semaphore(value:) with a negative value traps with a message")
    func negativeValueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Interlock.Semaphore(value: -1)
        }
        expectTrapMessage(result, contains: "Semaphore", "init(value:) with a negative value (-1)")
    }
}

extension Interlock.Semaphore {
    /// Records queued now, read under the list lock (tests only).
    var _queuedSnapshot: Int {
        _MutexWord.lock(_listLock, for: .test)
        defer { _ = _MutexWord.unlock(_listLock, for: .test) }
        return _queued.pointee
    }
}
