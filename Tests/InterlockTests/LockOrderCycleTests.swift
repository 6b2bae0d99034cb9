// Lock-order checking finds inversions: A -> B on one thread then B -> A on another (report
// mode prints one report and goes on; trap mode traps), and a cycle through three locks. The
// threads run one after the other, so the inversion is found although no deadlock happens.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: cycles are found")
struct LockOrderCycleTests {
    @Test("A -> B then B -> A on another thread: one report naming both, and the run goes on")
    func inversionReported() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B")
            nestOnNewThread(.lock(a), .lock(b))
            nestOnNewThread(.lock(b), .lock(a))
            // The same inversion again, on a third thread: already reported, so not again.
            nestOnNewThread(.lock(b), .lock(a))
            writeToStandardError("child: finished")
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: [
                "(INTERLOCK_LOCK_ORDER=report)", "Lock \"A\"", "Lock \"B\"", "closing a cycle of 2 locks",
                "child: finished",
            ])
        if let text = lockOrderStandardError(result) {
            #expect(!text.contains(lockOrderTrapMessage), "report mode must not trap; stderr:\n\(text)")
        }
    }

    @Test("A -> B then B -> A on another thread: trap mode traps with the report")
    func inversionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            setLockOrderMode("trap")
            let a = namedLock("A"), b = namedLock("B")
            nestOnNewThread(.lock(a), .lock(b))
            nestOnNewThread(.lock(b), .lock(a))
            writeToStandardError("child: went on after the inversion")
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: [
                "(INTERLOCK_LOCK_ORDER=trap)", "Lock \"A\"", "Lock \"B\"", "closing a cycle of 2 locks",
                lockOrderTrapMessage,
            ])
        if let text = lockOrderStandardError(result) {
            #expect(!text.contains("child: went on"), "trap mode must stop at the violation; stderr:\n\(text)")
        }
    }

    @Test("A -> B, B -> C, C -> A on three threads: a cycle of 3 locks")
    func threeLockCycle() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B"), c = namedLock("C")
            nestOnNewThread(.lock(a), .lock(b))
            nestOnNewThread(.lock(b), .lock(c))
            // Before the cycle closes: A -> B -> C is a consistent order.
            writeToStandardError("child: no cycle yet")
            nestOnNewThread(.lock(c), .lock(a))
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: ["Lock \"A\"", "Lock \"B\"", "Lock \"C\"", "closing a cycle of 3 locks"])
        if let text = lockOrderStandardError(result), let marker = text.range(of: "child: no cycle yet") {
            #expect(
                !text[..<marker.lowerBound].contains(lockOrderReportHeader),
                "no report before the cycle closes; stderr:\n\(text)")
        }
    }

    @Test("A -> B, B -> C, C -> A on three threads: trap mode traps")
    func threeLockCycleTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            setLockOrderMode("trap")
            let a = namedLock("A"), b = namedLock("B"), c = namedLock("C")
            closeCycle([.lock(a), .lock(b), .lock(c)])
        }
        expectLockOrderOutput(result, reports: 1, contains: ["closing a cycle of 3 locks", lockOrderTrapMessage])
    }

    @Test("a cycle found through a lock taken while holding several: each held lock gets its edge")
    func cycleThroughOneOfSeveralHeldLocks() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B"), c = namedLock("C")
            // A, B, then C: edges A -> C and B -> C (and A -> B).
            nestOnNewThread(.lock(a), .lock(b), .lock(c))
            // C -> B closes B -> C -> B, though B was not the lock taken just before C.
            nestOnNewThread(.lock(c), .lock(b))
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"B\"", "Lock \"C\"", "closing a cycle of 2 locks"])
    }
}
#endif
