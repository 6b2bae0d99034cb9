// Lock-order checking reports a thread locking a non-recursive lock that it already holds
// before the thread blocks for ever: trap mode traps there; report mode prints the report and
// lets the thread hang (the child reads the report from a pipe, then exits). In trap mode the
// misuse runs on a thread of its own while the child's main thread waits a bound that only a
// hang reaches, then exits 0: a missing check fails the test instead of hanging it.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: a thread locking a lock it holds")
struct LockOrderSelfDeadlockTests {
    @Test("Lock locked twice by one thread: trap mode traps before hanging")
    func lockTwiceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _selfDeadlockChild {
                let lock = namedLock("A")
                lock.lock()
                lock.lock()
            }
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: [
                "Lock \"A\"", "which it already holds", "(Lock is not recursive: this would hang)",
                lockOrderTrapMessage,
            ])
    }

    @Test("Lock locked twice by one thread: report mode prints the report before the thread hangs")
    func lockTwiceReported() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            exitOnceReported("this would hang") {
                let lock = namedLock("A")
                lock.lock()
                lock.lock()  // reported, then blocks for ever
            }
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: ["(INTERLOCK_LOCK_ORDER=report)", "Lock \"A\"", "which it already holds"])
    }

    @Test("ReadWriteLock read twice by one thread: reported (it hangs if a writer waits); report mode goes on")
    func readTwiceReported() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let lock = ReadWriteLock()
            onNewThread {
                lock.lockRead()
                lock.lockRead()  // no writer waits: it returns, after the report
                lock.unlockRead()
                lock.unlockRead()
            }
            writeToStandardError("child: went on")
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["ReadWriteLock at 0x", "which it already holds", "child: went on"])
    }

    @Test("a lock held under others, locked again: reported as held, not as a cycle")
    func lockAgainUnderAnother() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _selfDeadlockChild {
                let a = namedLock("A"), b = namedLock("B")
                a.lock()
                b.lock()
                a.lock()
            }
        }
        expectLockOrderOutput(result, reports: 1, contains: ["Lock \"A\"", "which it already holds"])
        if let text = lockOrderStandardError(result) {
            #expect(!text.contains("closing a cycle"), "stderr:\n\(text)")
        }
    }

    @Test("SpinLock locked twice by one thread traps, naming it by type and address")
    func spinLockTwice() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _selfDeadlockChild {
                let lock = SpinLock()
                writeToStandardError("spin=\(lockOrderHex(lock))")
                lock.lock()
                lock.lock()
            }
        }
        expectLockOrderOutput(result, reports: 1, contains: ["which it already holds", lockOrderTrapMessage])
        if let text = lockOrderStandardError(result), let hex = childMarker("spin=", in: text) {
            #expect(text.contains("SpinLock at \(hex), which it already holds"), "stderr:\n\(text)")
        }
    }

    @Test("ReadWriteLock: a write lock asked for while holding a read lock traps")
    func writeWhileReading() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _selfDeadlockChild {
                let lock = ReadWriteLock()
                lock.lockRead()
                lock.lockWrite()
            }
        }
        expectLockOrderOutput(result, reports: 1, contains: ["ReadWriteLock at 0x", "which it already holds"])
    }

    @Test("Condition and ConditionLock locked twice by one thread trap")
    func conditionsTwice() async {
        let condition = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _selfDeadlockChild {
                let condition = Condition()
                condition.name = "C"
                condition.lock()
                condition.lock()
            }
        }
        expectLockOrderOutput(condition, reports: 1, contains: ["Condition \"C\"", "which it already holds"])
        let conditionLock = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _selfDeadlockChild {
                let lock = ConditionLock(condition: 1)
                lock.name = "CL"
                lock.lock()
                lock.lock(whenCondition: 1)
            }
        }
        expectLockOrderOutput(conditionLock, reports: 1, contains: ["ConditionLock \"CL\"", "which it already holds"])
    }
}

/// In trap mode, runs `misuse` on a thread of its own and exits 0 once it returns, or after a
/// bound that only a hang reaches: the trap must end the child first.
private func _selfDeadlockChild(_ misuse: @escaping @Sendable () -> Void) -> Never {
    setLockOrderMode("trap")
    let finished = AtomicBool(false)
    _ = TestThread {
        misuse()
        finished.store(true)
    }
    _ = lockEventually(within: .seconds(60)) { finished.load() }
    exit(0)
}
#endif
