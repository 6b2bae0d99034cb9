// Helpers of the Lock, SpinLock, RecursiveLock and ReadWriteLock tests: a plain (non-atomic)
// value that only a lock can keep consistent, a bounded poll that turns a hang into a failed
// expectation, timing checks for timed lock forms, and trap-message checks for exit tests.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value with no synchronization of its own (ConditionTestSupport.swift's `PlainShared`):
/// correct only when a lock protects every access, which is what the tests check.
typealias LockGuarded<Value> = PlainShared<Value>

/// How long a lock test waits for progress before declaring a stall. Generous: the machine is
/// shared with other builds, and ThreadSanitizer is slow.
let lockStallLimit: Duration = .seconds(30)

/// How late a timed lock may return after its deadline before the test calls it absurd.
let lockLatenessLimit: Duration = .seconds(5)

/// Polls `condition`, yielding between polls, until it holds or `limit` has passed.
/// - Returns: whether it held.
func lockEventually(within limit: Duration = lockStallLimit, _ condition: () -> Bool) -> Bool {
    progresses(within: limit, condition)
}

/// The outcome of a timed lock call, measured on whatever thread made it (expectations are
/// then checked on the test's own thread).
struct TimedAttempt: Sendable {
    var acquired: Bool
    var deadline: ContinuousClock.Instant
    var returned: ContinuousClock.Instant
}

/// Makes a timed lock call whose deadline is `timeout` from now, measuring when it returned.
func timedAttempt(after timeout: Duration, _ attempt: (ContinuousClock.Instant) -> Bool) -> TimedAttempt {
    let deadline = ContinuousClock.now + timeout
    let acquired = attempt(deadline)
    return TimedAttempt(acquired: acquired, deadline: deadline, returned: ContinuousClock.now)
}

/// Makes the timed lock call `attempt` on a new thread and returns its outcome.
func timedAttemptOnAnotherThread(
    after timeout: Duration, _ attempt: @escaping @Sendable (ContinuousClock.Instant) -> Bool
) -> TimedAttempt {
    let outcome = LockGuarded<TimedAttempt?>(nil)
    TestThread { outcome.value = timedAttempt(after: timeout, attempt) }.join()
    return outcome.value!
}

/// Checks that a timed call returned `false`, not before its deadline and not absurdly late.
func expectTimedOut(_ outcome: TimedAttempt, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(!outcome.acquired, "the timed lock should have timed out", sourceLocation: sourceLocation)
    #expect(
        outcome.returned >= outcome.deadline,
        "returned \(outcome.deadline - outcome.returned) before its deadline", sourceLocation: sourceLocation)
    #expect(
        outcome.returned - outcome.deadline < lockLatenessLimit,
        "returned \(outcome.returned - outcome.deadline) after its deadline", sourceLocation: sourceLocation)
}

/// An error thrown from a critical section, to check that `withLock` unlocks on throw.
struct LockTestError: Error, Equatable {}

/// The ck-style exclusion check, for any `Locking` type: `threads` threads each run `rounds`
/// critical sections that add 1 to a plain counter ten times, check that it rose by exactly
/// ten, bring it back and check it is back; then the number of sections is verified. A lock
/// that lets two threads in at once makes a section see another's increments or lose some.
func checkExclusion<L: Locking>(
    _ lock: L, threads: Int, rounds: Int,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let counter = LockGuarded(0)
    let total = LockGuarded(0)
    let violations = LockGuarded(0)
    runConcurrently(threadCount: threads) { _ in
        for _ in 0..<rounds {
            lock.lock()
            // Each step is an opaque call: the optimizer cannot fold the section into nothing
            // (`entry + 10 == entry + 10`), so an overlap of two holders is seen.
            let entry = opaqueRead(counter)
            for _ in 0..<10 { opaqueAdd(counter, 1) }
            if opaqueRead(counter) != entry + 10 { violations.value += 1 }
            opaqueAdd(counter, -10)
            if opaqueRead(counter) != entry { violations.value += 1 }
            total.value += 1
            lock.unlock()
        }
    }
    #expect(violations.value == 0, sourceLocation: sourceLocation)
    #expect(counter.value == 0, sourceLocation: sourceLocation)
    #expect(total.value == threads * rounds, sourceLocation: sourceLocation)
}

/// Reads `box.value` through a call the optimizer cannot see into.
@inline(never) func opaqueRead(_ box: LockGuarded<Int>) -> Int { box.value }

/// Adds `delta` to `box.value` through a call the optimizer cannot see into.
@inline(never) func opaqueAdd(_ box: LockGuarded<Int>, _ delta: Int) { box.value += delta }
