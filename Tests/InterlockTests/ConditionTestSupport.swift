// Helpers of the Condition and ConditionLock tests: a plain (non-atomic) value shared between
// threads, which is correct only when a lock protects it, and a bounded poll that turns a
// lost wake-up into a failed expectation instead of a hung test.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value with no synchronization of its own: every access must be made under a lock,
/// which is exactly what the tests check (ThreadSanitizer flags any access that is not).
final class PlainShared<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// How long a test waits for progress before it declares a stall (a lost wake-up).
/// Generous: the machine is shared, and ThreadSanitizer is slow.
let conditionStallLimit: Duration = .seconds(30)

/// Polls `condition` (yielding the processor between polls) until it holds or `limit` has
/// passed. - Returns: whether it held; `false` means the awaited progress never came.
func progresses(within limit: Duration = conditionStallLimit, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        sched_yield()
    }
    return true
}
