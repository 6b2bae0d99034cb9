// Lock-order checking and the acquisitions that cannot wait for ever: a try-lock or a timed
// lock(before:) adds no edge into the lock it takes (A then tryLock B on one thread, B then
// tryLock A on another is no report), but once it succeeds the lock counts as held, so locks
// taken under it get edges from it.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: try and timed acquisitions")
struct LockOrderTryTimedTests {
    @Test("A then try-lock X, X then try-lock A, for X of every type: no report")
    func tryLocksAddNoEdge() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            for other in _everyTryableUse() {
                let a = LockUse.lock(namedLock("A"))
                onNewThread { a.hold { guard other.tryHold!({}) else { exit(5) } } }
                onNewThread { other.hold { guard a.tryHold!({}) else { exit(5) } } }
            }
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("A then lock X before a deadline, X then A before a deadline, for X of every type: no report")
    func timedLocksAddNoEdge() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            for other in _everyTryableUse() where other.holdBefore != nil {
                let a = LockUse.lock(namedLock("A"))
                onNewThread { a.hold { guard other.holdBefore!(.now + .seconds(60), {}) else { exit(5) } } }
                onNewThread { other.hold { guard a.holdBefore!(.now + .seconds(60), {}) else { exit(5) } } }
            }
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("a lock taken by tryLock counts as held: a lock taken under it gets an edge from it")
    func tryLockedLockIsHeld() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B"), c = namedLock("C")
            onNewThread {
                a.lock()
                guard b.tryLock() else { exit(5) }
                c.lock()  // edges A -> C and B -> C
                c.unlock()
                b.unlock()
                a.unlock()
            }
            nestOnNewThread(.lock(c), .lock(b))  // closes B -> C -> B
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"B\"", "Lock \"C\"", "closing a cycle of 2 locks"])
    }

    @Test("a lock taken by lock(before:) counts as held: a lock taken under it gets an edge from it")
    func timedLockedLockIsHeld() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let b = namedLock("B"), c = namedLock("C")
            onNewThread {
                guard b.lock(before: .now + .seconds(60)) else { exit(5) }
                c.lock()  // edge B -> C
                c.unlock()
                b.unlock()
            }
            nestOnNewThread(.lock(c), .lock(b))  // closes B -> C -> B
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"B\"", "Lock \"C\"", "closing a cycle of 2 locks"])
    }
}

/// A fresh lock of every type, each with its try form (and timed form where the type has one).
private func _everyTryableUse() -> [LockUse] {
    let rw = ReadWriteLock()
    return [
        .lock(namedLock("B")), .spinLock(SpinLock()), .recursiveLock(RecursiveLock()), .read(rw),
        .write(ReadWriteLock()), .condition(Condition()), .conditionLock(ConditionLock()),
        .conditionLock(ConditionLock(condition: 3), whenCondition: 3),
    ]
}
#endif
