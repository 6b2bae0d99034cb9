// Tests of Once: the body runs exactly once among many threads, every caller sees its effects
// (also callers that take the inline fast path), callers that overlap the body sleep in the
// kernel until it ends, a body that throws does not count (the next caller, or one of the
// sleeping callers, runs it again, and none is left asleep), and isDone. The recursion trap
// is in OnceTrapTests.swift.

import CInterlock
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Once")
struct OnceTests {
    @Test("the body runs exactly once among 16 threads started together, and every caller sees its effects")
    func bodyRunsOnce() {
        let threads = 16
        for round in 0..<TestScale.count(100, small: 10) {
            let once = Once()
            let bodies = AtomicInt(0)
            // Plain memory, written by the body: only Once orders the callers' reads after it.
            let effect = LockGuarded<[Int]>([])
            let sawEffect = AtomicInt(0)
            let finished = runConcurrentlyWithinStallLimit(threadCount: threads) { index in
                once.run {
                    bodies.increment()
                    effect.value = [round, index, round &+ index]
                }
                let seen = effect.value
                if seen.count == 3 && seen[0] == round && seen[2] == round &+ seen[1] { sawEffect.increment() }
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(bodies.load() == 1, "round \(round): the body ran \(bodies.load()) times")
            #expect(
                sawEffect.load() == threads,
                "round \(round): \(threads - sawEffect.load()) callers missed the body's effects")
            #expect(once.isDone)
        }
    }

    @Test("callers that find the body done (the inline path) see its effects without other synchronization")
    func fastPathCallersSeeEffects() {
        // The readers learn that the body has run through a RELAXED flag, which orders nothing:
        // only the acquire of run's inline check (or of isDone) may order their plain reads after
        // the body's plain writes. ThreadSanitizer reports a race if either were relaxed.
        for _ in 0..<TestScale.count(50, small: 10) {
            let once = Once()
            let effect = LockGuarded<[Int]>([])
            let announced = AtomicBool(false)
            let reruns = AtomicInt(0)
            let sawEffect = AtomicInt(0)
            let readers = 4
            let finished = runConcurrentlyWithinStallLimit(threadCount: readers + 1) { index in
                if index == 0 {
                    once.run { effect.value = [1, 2, 3] }
                    // Relaxed: deliberately no happens-before edge (see above).
                    announced.store(true, ordering: .relaxed)
                    return
                }
                if index & 1 == 0 {
                    while !announced.load(ordering: .relaxed) { sched_yield() }
                    once.run { reruns.increment() }
                } else {
                    while !once.isDone { sched_yield() }
                }
                if effect.value == [1, 2, 3] { sawEffect.increment() }
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(reruns.load() == 0)
            #expect(sawEffect.load() == readers)
        }
    }

    @Test("callers that arrive while the body runs sleep in the kernel until it ends, then see its effects")
    func overlappingCallersSleep() {
        let once = Once()
        let bodies = AtomicInt(0)
        let effect = LockGuarded(0)
        let sawEffect = AtomicInt(0)
        let callers = LockGuarded<OverlappingCallers?>(nil)
        let allAsleep = LockGuarded(false)
        let doneWhileRunning = LockGuarded(true)
        let runner = TestThread {
            once.run {
                bodies.increment()
                // Started from inside the body, so they surely overlap it.
                let overlapping = OverlappingCallers(count: 6) { _ in
                    once.run { bodies.increment() }
                    if effect.value == 42 { sawEffect.increment() }
                }
                callers.value = overlapping
                // The body goes on only once every caller sleeps: a caller that spun instead
                // would never be seen in state "S".
                allAsleep.value = overlapping.waitUntilAllAsleep()
                doneWhileRunning.value = once.isDone
                effect.value = 42
            }
        }
        runner.join()
        #expect(allAsleep.value, "callers overlapping the body did not all sleep in the kernel")
        #expect(!doneWhileRunning.value, "isDone was true while the body ran")
        let returned = callers.value!.joinAll()
        #expect(returned, "\(6 - callers.value!.returnedCount) sleeping callers were never woken")
        guard returned else { return }
        #expect(bodies.load() == 1)
        #expect(sawEffect.load() == 6)
        #expect(once.isDone)
    }

    @Test("a body that throws does not count: its caller gets the error and the next call runs the body again")
    func throwingBodyIsNotDone() throws {
        let once = Once()
        let attempts = LockGuarded(0)
        #expect(!once.isDone)
        for expected in 1...2 {
            #expect(throws: OnceTestError(attempt: expected)) {
                try once.run {
                    attempts.value += 1
                    throw OnceTestError(attempt: attempts.value)
                }
            }
            #expect(!once.isDone, "isDone after a body that threw")
        }
        once.run { attempts.value += 1 }
        #expect(attempts.value == 3)
        #expect(once.isDone)
        for _ in 0..<10 {
            try once.run {
                attempts.value += 1
                throw OnceTestError(attempt: attempts.value)
            }
        }
        #expect(attempts.value == 3, "a completed Once ran its body again")
    }

    @Test("when the body throws, callers asleep waiting for it wake, one of them runs it again, and all return")
    func sleepingCallersRetryAfterThrow() {
        let once = Once()
        let attempts = AtomicInt(0)
        let effect = LockGuarded(0)
        let sawEffect = AtomicInt(0)
        let callers = LockGuarded<OverlappingCallers?>(nil)
        let allAsleep = LockGuarded(false)
        let runnerError = LockGuarded<OnceTestError?>(nil)
        let count = 6
        let runner = TestThread {
            do {
                try once.run {
                    attempts.increment()
                    let overlapping = OverlappingCallers(count: count) { _ in
                        once.run {
                            let attempt = attempts.increment()
                            effect.value = attempt
                        }
                        if effect.value == 2 { sawEffect.increment() }
                    }
                    callers.value = overlapping
                    allAsleep.value = overlapping.waitUntilAllAsleep()
                    throw OnceTestError(attempt: 1)
                }
            } catch {
                runnerError.value = error as? OnceTestError
            }
        }
        runner.join()
        #expect(allAsleep.value, "callers overlapping the body did not all sleep in the kernel")
        #expect(runnerError.value == OnceTestError(attempt: 1), "the runner did not get its body's error")
        let returned = callers.value!.joinAll()
        #expect(
            returned,
            "\(count - callers.value!.returnedCount) of \(count) callers asleep when the body threw never returned")
        guard returned else { return }
        #expect(attempts.load() == 2, "the body ran \(attempts.load()) times (once throwing, then once more expected)")
        #expect(sawEffect.load() == count)
        #expect(once.isDone)
    }

    @Test(
        "many threads racing on bodies that throw on their first attempts: exactly one completion, every error reaches its own runner"
    )
    func racingThrowingBodies() {
        let threads = 8
        let failures = 3
        for _ in 0..<TestScale.count(50, small: 5) {
            let once = Once()
            let attempts = LockGuarded(0)  // plain: bodies never overlap
            let completions = AtomicInt(0)
            let errors = AtomicInt(0)
            let finished = runConcurrentlyWithinStallLimit(threadCount: threads) { _ in
                while true {
                    do {
                        try once.run {
                            attempts.value += 1
                            if attempts.value <= failures { throw OnceTestError(attempt: attempts.value) }
                            completions.increment()
                        }
                        return
                    } catch {
                        errors.increment()
                    }
                }
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(attempts.value == failures + 1)
            #expect(completions.load() == 1)
            #expect(errors.load() == failures)
            #expect(once.isDone)
        }
    }

    @Test("a body may run other Once objects, and the thread of a body that threw may run it again")
    func nestingAndRetryOnOneThread() throws {
        let outer = Once(), inner = Once()
        var order: [String] = []
        outer.run {
            order.append("outer")
            inner.run { order.append("inner") }
            inner.run { order.append("inner again") }
        }
        #expect(order == ["outer", "inner"])
        #expect(outer.isDone && inner.isDone)

        let retried = Once()
        #expect(throws: OnceTestError(attempt: 1)) {
            try retried.run { throw OnceTestError(attempt: 1) }
        }
        // Same thread: the runner's id was cleared, so this is no recursive call.
        retried.run { order.append("retried") }
        #expect(order.last == "retried")
        #expect(retried.isDone)
    }
}
