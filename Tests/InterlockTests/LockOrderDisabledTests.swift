// Built without the package trait LockOrderChecking, lock-order checking does not exist:
// INTERLOCK_LOCK_ORDER=trap changes nothing, an inversion runs to the end without a report, and
// LockOrderChecking.isEnabled is false. (The checks themselves are tested by the other
// LockOrder*Tests.swift files, which build only with the trait.)

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if !INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: compiled out without the trait")
struct LockOrderDisabledTests {
    @Test("INTERLOCK_LOCK_ORDER=trap without the trait: an inversion is not reported, isEnabled is false")
    func noChecksWithoutTheTrait() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("trap")
            let a = namedLock("A"), b = namedLock("B")
            nestOnNewThread(.lock(a), .lock(b))
            nestOnNewThread(.lock(b), .lock(a))
            // A self-deadlock is not reported either; the try form keeps this from hanging.
            a.lock()
            guard !a.tryLock() else { exit(2) }
            a.unlock()
            guard !LockOrderChecking.isEnabled else { exit(1) }
            writeToStandardError("child: ran to the end")
        }
        expectLockOrderOutput(result, reports: 0, contains: ["child: ran to the end"])
        if let text = lockOrderStandardError(result) {
            #expect(!text.contains("lock-order"), "stderr:\n\(text)")
        }
    }
}
#endif
