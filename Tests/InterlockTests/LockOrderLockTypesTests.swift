// Every lock type takes part in lock-order checking: an inversion between a Lock and each of
// SpinLock, ReadWriteLock (read and write), Condition, ConditionLock (lock(whenCondition:)),
// RecursiveLock, synchronized(object), Locked and ReadWriteLocked is reported, naming it; so
// is one cycle through all of them; and Condition.wait keeps the condition's mutex on the held
// list.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: every lock type")
struct LockOrderLockTypesTests {
    @Test("Lock and SpinLock inverted: reported, the SpinLock by type and address")
    func spinLock() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            closeCycle([.lock(namedLock("A")), .spinLock(SpinLock())])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "SpinLock at 0x", "closing a cycle of 2 locks"])
    }

    @Test("Lock and ReadWriteLock (read) inverted: reported")
    func readLock() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            closeCycle([.lock(namedLock("A")), .read(ReadWriteLock())])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "ReadWriteLock at 0x", "closing a cycle of 2 locks"])
    }

    @Test("Lock and ReadWriteLock (write) inverted: reported")
    func writeLock() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            closeCycle([.lock(namedLock("A")), .write(ReadWriteLock())])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "ReadWriteLock at 0x", "closing a cycle of 2 locks"])
    }

    @Test("Lock and Locked inverted: reported, naming the Locked")
    func locked() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let locked = Locked(0)
            locked.name = "sessions"
            closeCycle([.lock(namedLock("A")), .locked(locked)])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "Locked \"sessions\" (0x", "closing a cycle of 2 locks"])
    }

    @Test("Lock and ReadWriteLocked (read on one thread, write on another) inverted: reported")
    func readWriteLocked() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), rw = ReadWriteLocked(0)
            nestOnNewThread(.lock(a), .readWriteLocked(rw, write: false))
            nestOnNewThread(.readWriteLocked(rw, write: true), .lock(a))
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "ReadWriteLocked at 0x", "closing a cycle of 2 locks"])
    }

    @Test("ReadWriteLock read on one thread and write on another, inverted with a Lock: reported")
    func readThenWrite() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), rw = ReadWriteLock()
            nestOnNewThread(.lock(a), .read(rw))
            nestOnNewThread(.write(rw), .lock(a))
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "ReadWriteLock at 0x", "closing a cycle of 2 locks"])
    }

    @Test("Lock and Condition inverted: reported, naming the condition")
    func condition() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let condition = Condition()
            condition.name = "C"
            closeCycle([.lock(namedLock("A")), .condition(condition)])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "Condition \"C\"", "closing a cycle of 2 locks"])
    }

    @Test("Lock and ConditionLock (lock(whenCondition:)) inverted: reported, naming the lock")
    func conditionLock() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let lock = ConditionLock(condition: 2)
            lock.name = "CL"
            closeCycle([.lock(namedLock("A")), .conditionLock(lock, whenCondition: 2)])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "ConditionLock \"CL\"", "closing a cycle of 2 locks"])
    }

    @Test("ConditionLock taken by lock() on one side, lock(whenCondition:) on the other: reported")
    func conditionLockBothForms() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), lock = ConditionLock(condition: 0)
            lock.name = "CL"
            nestOnNewThread(.lock(a), .conditionLock(lock))
            nestOnNewThread(.conditionLock(lock, whenCondition: 0), .lock(a))
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "ConditionLock \"CL\"", "closing a cycle of 2 locks"])
    }

    @Test("Lock and RecursiveLock inverted: reported, naming the lock")
    func recursiveLock() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let lock = RecursiveLock()
            lock.name = "R"
            closeCycle([.lock(namedLock("A")), .recursiveLock(lock)])
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"A\"", "RecursiveLock \"R\"", "closing a cycle of 2 locks"])
    }

    @Test("Lock and synchronized(object) inverted: reported, naming the object's type")
    func synchronizedObject() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            closeCycle([.lock(namedLock("A")), .synchronized(LockOrderToken())])
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: ["Lock \"A\"", "synchronized(LockOrderToken at 0x", "closing a cycle of 2 locks"])
    }

    @Test("one cycle through every lock type, an edge per thread: a cycle of 8 locks")
    func mixedCycle() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let condition = Condition(), conditionLock = ConditionLock(condition: 1), recursive = RecursiveLock()
            condition.name = "C"
            conditionLock.name = "CL"
            recursive.name = "R"
            closeCycle([
                .lock(namedLock("A")), .spinLock(SpinLock()), .read(ReadWriteLock()), .write(ReadWriteLock()),
                .condition(condition), .conditionLock(conditionLock, whenCondition: 1), .recursiveLock(recursive),
                .synchronized(LockOrderToken()),
            ])
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: [
                "closing a cycle of 8 locks", "Lock \"A\"", "SpinLock at 0x", "ReadWriteLock at 0x",
                "Condition \"C\"", "ConditionLock \"CL\"", "RecursiveLock \"R\"", "synchronized(LockOrderToken at 0x",
            ])
        if let text = lockOrderStandardError(result) {
            // The cycle's seven older edges, each with where it was first seen.
            #expect(occurrences(of: "first seen on thread", in: text) == 7, "stderr:\n\(text)")
        }
    }

    @Test("Condition.wait keeps its mutex held: a lock taken after the wait gets its edge")
    func conditionWaitKeepsTheMutexHeld() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let condition = Condition()
            condition.name = "C"
            let a = namedLock("A")
            onNewThread {
                condition.lock()
                _ = condition.wait(until: .now)  // times out at once, holding C again
                a.lock()  // edge C -> A
                a.unlock()
                condition.unlock()
            }
            writeToStandardError("child: C -> A done")
            nestOnNewThread(.lock(a), .condition(condition))
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Condition \"C\"", "Lock \"A\"", "closing a cycle of 2 locks"])
        if let text = lockOrderStandardError(result), let marker = text.range(of: "child: C -> A done") {
            #expect(!text[..<marker.lowerBound].contains(lockOrderReportHeader), "stderr:\n\(text)")
        }
    }
}
#endif
