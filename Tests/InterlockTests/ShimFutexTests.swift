// The C shim's futex interface and clocks, on real threads: wait with a stale value returns
// at once; timeouts are never early and not absurdly late; a deadline on CLOCK_BOOTTIME is
// honoured; wake releases waiters; requeue moves them to another word. No sleep stands in for
// synchronization: a waker loops until the kernel reports it woke someone, or until the
// waiter reports that it has returned.

import CInterlock
import Testing

private let millisecond: Int64 = 1_000_000
private let second: Int64 = 1_000_000_000

/// A futex word at a stable address, with the waiters' reports.
private final class FutexWord: @unchecked Sendable {
    let word: UnsafeMutablePointer<UInt32>
    init(_ value: UInt32 = 0) {
        word = .allocate(capacity: 1)
        word.initialize(to: value)
    }
    deinit { word.deallocate() }
}

@Suite("C shim: futex wait/wake/requeue and clocks")
struct ShimFutexTests {
    @Test("wait with a value that does not match returns VALUE_CHANGED at once")
    func valueChanged() {
        let futex = FutexWord(7)
        let start = ilk_clock_monotonic_ns()
        #expect(ilk_futex_wait(futex.word, 8, -1) == ILK_FUTEX_VALUE_CHANGED)
        #expect(ilk_futex_wait(futex.word, 8, 120 * second) == ILK_FUTEX_VALUE_CHANGED)
        // Generous (parallel tests on 2 cores, ThreadSanitizer), yet far below the timeout.
        #expect(ilk_clock_monotonic_ns() - start < 60 * second, "it slept")
    }

    @Test("wake with nobody waiting wakes nobody")
    func wakeNobody() {
        let futex = FutexWord(0)
        let other = FutexWord(0)
        #expect(ilk_futex_wake(futex.word, 1) == 0)
        #expect(ilk_futex_wake_one(futex.word) == 0)
        #expect(ilk_futex_wake_all(futex.word) == 0)
        #expect(ilk_futex_requeue(futex.word, 0, 1, other.word, 1) == 0)
    }

    @Test("a 20 ms timeout returns TIMED_OUT, no earlier than 20 ms and well under 2 s")
    func timeout() {
        let futex = FutexWord(0)
        var result: Int32 = -1
        var elapsed: Int64 = 0
        // The contract allows spurious returns (WOKEN); the timed-out call is the one we judge.
        for _ in 0..<5 {
            let start = ilk_clock_monotonic_ns()
            result = ilk_futex_wait(futex.word, 0, 20 * millisecond)
            elapsed = ilk_clock_monotonic_ns() - start
            if result != ILK_FUTEX_WOKEN { break }
        }
        #expect(result == ILK_FUTEX_TIMED_OUT)
        #expect(elapsed >= 20 * millisecond, "timed out after \(elapsed) ns")
        #expect(elapsed < 30 * second, "timed out after \(elapsed) ns")  // absurdly late only
    }

    @Test("wait_until with a deadline in the past returns TIMED_OUT at once")
    func deadlineInThePast() {
        let futex = FutexWord(0)
        let start = ilk_clock_monotonic_ns()
        #expect(ilk_futex_wait_until(futex.word, 0, ilk_clock_boottime_ns() - second) == ILK_FUTEX_TIMED_OUT)
        #expect(ilk_futex_wait_until(futex.word, 0, 0) == ILK_FUTEX_TIMED_OUT)
        #expect(ilk_futex_wait_until(futex.word, 0, ilk_clock_boottime_ns()) == ILK_FUTEX_TIMED_OUT)
        // Generous: catches a wait that sleeps instead of returning, never a loaded machine.
        #expect(ilk_clock_monotonic_ns() - start < 30 * second, "it slept")
    }

    @Test("wait_until 30 ms ahead never times out before CLOCK_BOOTTIME reaches the deadline")
    func deadlineAhead() {
        let futex = FutexWord(0)
        let deadline = ilk_clock_boottime_ns() + 30 * millisecond
        var result = Int32(ILK_FUTEX_WOKEN)
        var calls = 0
        while result == ILK_FUTEX_WOKEN && calls < 100 {  // WOKEN: a spurious return; wait again
            result = ilk_futex_wait_until(futex.word, 0, deadline)
            calls += 1
        }
        let now = ilk_clock_boottime_ns()
        #expect(result == ILK_FUTEX_TIMED_OUT)
        #expect(now >= deadline, "returned \(deadline - now) ns before the deadline")
        #expect(now - deadline < 30 * second)  // absurdly late only
    }

    @Test("wake releases a waiter blocked on an unchanged word")
    func wakeReleasesWaiter() {
        let futex = FutexWord(0)
        let returned = ShimFlag()
        let waiterResult = ResultCell()
        let waiter = TestThread {
            waiterResult.set(ilk_futex_wait(futex.word, 0, -1))
            returned.set()
        }
        // Until the waiter is asleep, wake finds nobody (0); once it returns 1 it woke ours.
        var woken: Int32 = 0
        while woken == 0 && !returned.isSet {
            woken = ilk_futex_wake(futex.word, 1)
            if woken == 0 { ilk_thread_yield() }
        }
        waiter.join()
        #expect(woken == 1, "the kernel reported waking the waiter")
        #expect(waiterResult.value == ILK_FUTEX_WOKEN)
    }

    @Test("set the word then wake: the classic protocol loses no wake-up")
    func setThenWake() {
        let rounds = TestScale.count(200, small: 20)
        for _ in 0..<rounds {
            let futex = FutexWord(0)
            let returned = ShimFlag()
            let waiter = TestThread {
                // Loop on the condition: VALUE_CHANGED and spurious returns are fine.
                while ilk_atomic_load_u32(futex.word, ILK_ORDER_ACQUIRE) == 0 {  // pairs with the store below
                    _ = ilk_futex_wait(futex.word, 0, -1)
                }
                returned.set()
            }
            ilk_atomic_store_u32(futex.word, 1, ILK_ORDER_RELEASE)  // pairs with the waiter's acquire load
            while !returned.isSet {
                if ilk_futex_wake_one(futex.word) == 0 { ilk_thread_yield() }
            }
            waiter.join()
            #expect(returned.isSet)
        }
    }

    @Test("wake_all releases every waiter")
    func wakeAll() {
        let futex = FutexWord(0)
        let waiterCount = 3
        let returnedCount = ShimCounter()
        let waiters = (0..<waiterCount).map { _ in
            TestThread {
                _ = ilk_futex_wait(futex.word, 0, -1)
                returnedCount.increment()
            }
        }
        var woken = 0
        while woken < waiterCount && returnedCount.value < waiterCount {
            let n = Int(ilk_futex_wake_all(futex.word))
            woken += n
            if n == 0 { ilk_thread_yield() }
        }
        for waiter in waiters { waiter.join() }
        #expect(returnedCount.value == waiterCount)
        #expect(woken <= waiterCount, "wake never reports more waiters than exist")
    }

    @Test("requeue moves a waiter to a second word; waking that word releases it")
    func requeue() {
        let first = FutexWord(0)
        let second = FutexWord(0)
        let returned = ShimFlag()
        let waiterResult = ResultCell()
        let waiter = TestThread {
            waiterResult.set(ilk_futex_wait(first.word, 0, -1))
            returned.set()
        }
        #expect(
            ilk_futex_requeue(first.word, 1, 0, second.word, 1) == -EAGAIN,
            "a requeue whose expected value is stale does nothing and says so")
        // Wake none, requeue one: returns 1 once the waiter was asleep on `first` and moved.
        var moved: Int32 = 0
        while moved == 0 && !returned.isSet {
            moved = ilk_futex_requeue(first.word, 0, 0, second.word, 1)
            if moved == 0 { ilk_thread_yield() }
        }
        #expect(moved == 1)
        if moved == 1 {
            #expect(ilk_futex_wake(first.word, 1) == 0, "nobody is left waiting on the first word")
            #expect(returned.isSet == false, "a requeued waiter stays asleep")
            #expect(ilk_futex_wake(second.word, 1) == 1, "the waiter now waits on the second word")
        }
        waiter.join()
        #expect(waiterResult.value == ILK_FUTEX_WOKEN)
    }

    @Test("clocks: CLOCK_BOOTTIME >= CLOCK_MONOTONIC, and both advance")
    func clocks() {
        let monotonic = ilk_clock_monotonic_ns()
        let boottime = ilk_clock_boottime_ns()
        #expect(monotonic > 0)
        #expect(boottime >= monotonic)
        var laterMonotonic = monotonic
        var laterBoottime = boottime
        for _ in 0..<10_000_000 where laterMonotonic == monotonic || laterBoottime == boottime {
            laterMonotonic = ilk_clock_monotonic_ns()
            laterBoottime = ilk_clock_boottime_ns()
        }
        #expect(laterMonotonic > monotonic)
        #expect(laterBoottime > boottime)
    }
}

// MARK: - Small cross-thread cells for the reports (atomics from the shim itself)

/// A flag set once by one thread and polled by another (release/acquire).
private final class ShimFlag: @unchecked Sendable {
    private let cell = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
    init() { cell.initialize(to: 0) }
    deinit { cell.deallocate() }
    func set() { ilk_atomic_store_u32(cell, 1, ILK_ORDER_RELEASE) }  // pairs with isSet's acquire
    var isSet: Bool { ilk_atomic_load_u32(cell, ILK_ORDER_ACQUIRE) != 0 }  // pairs with set()
}

/// A counter incremented by many threads.
private final class ShimCounter: @unchecked Sendable {
    private let cell = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    init() { cell.initialize(to: 0) }
    deinit { cell.deallocate() }
    func increment() { _ = ilk_atomic_fetch_add_iptr(cell, 1, ILK_ORDER_SEQ_CST) }
    var value: Int { ilk_atomic_load_iptr(cell, ILK_ORDER_SEQ_CST) }
}

/// One Int32 result handed from a thread to the joiner.
private final class ResultCell: @unchecked Sendable {
    private let cell = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    init() { cell.initialize(to: -1) }
    deinit { cell.deallocate() }
    func set(_ value: Int32) { ilk_atomic_store_i32(cell, value, ILK_ORDER_RELEASE) }  // read after join
    var value: Int32 { ilk_atomic_load_i32(cell, ILK_ORDER_ACQUIRE) }
}
