// The run-time switch of lock-order checking, INTERLOCK_LOCK_ORDER (read once, at the first
// lock operation): `trap` and `report` turn the checks on, `off` (or no variable) leaves them
// off, and any other value traps with a message naming it.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: INTERLOCK_LOCK_ORDER")
struct LockOrderModeTests {
    @Test("isEnabled is true with INTERLOCK_LOCK_ORDER=report")
    func enabledByReport() async {
        await #expect(processExitsWith: .success) {
            setLockOrderMode("report")
            guard LockOrderChecking.isEnabled else { exit(1) }
        }
    }

    @Test("isEnabled is true with INTERLOCK_LOCK_ORDER=trap")
    func enabledByTrap() async {
        await #expect(processExitsWith: .success) {
            setLockOrderMode("trap")
            guard LockOrderChecking.isEnabled else { exit(1) }
        }
    }

    @Test("INTERLOCK_LOCK_ORDER=off: isEnabled is false and an inversion is not reported")
    func off() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("off")
            let a = namedLock("A"), b = namedLock("B")
            closeCycle([.lock(a), .lock(b)])
            guard !LockOrderChecking.isEnabled else { exit(1) }
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("without INTERLOCK_LOCK_ORDER: isEnabled is false")
    func unset() async {
        await #expect(processExitsWith: .success) {
            unsetenv("INTERLOCK_LOCK_ORDER")
            guard !LockOrderChecking.isEnabled else { exit(1) }
        }
    }

    @Test("the mode is read once: changing the variable after the first lock operation changes nothing")
    func readOnce() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B")
            nestOnNewThread(.lock(a), .lock(b))
            setLockOrderMode("trap")  // too late: report mode goes on after the violation
            nestOnNewThread(.lock(b), .lock(a))
            guard LockOrderChecking.isEnabled else { exit(1) }
        }
        expectLockOrderOutput(result, reports: 1, contains: ["(INTERLOCK_LOCK_ORDER=report)"])
    }

    @Test("INTERLOCK_LOCK_ORDER=bogus traps at the first lock operation, naming the value")
    func invalidValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            setLockOrderMode("bogus")
            let lock = Lock()
            lock.lock()
            lock.unlock()
        }
        if let text = lockOrderStandardError(result) {
            #expect(text.contains("INTERLOCK_LOCK_ORDER=bogus is not a mode"), "stderr:\n\(text)")
        }
    }
}
#endif
