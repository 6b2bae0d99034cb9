// Lock-order checking stays silent where no deadlock is possible: the same order on many
// threads at once, re-entering a RecursiveLock or a synchronized object (which cannot block),
// and unlocking out of acquisition order (which must leave the thread's held list right).

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: no report without an inversion")
struct LockOrderNoReportTests {
    @Test("one order of every lock type, taken by 8 threads at once: no report")
    func consistentOrderOnManyThreads() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let rw = ReadWriteLock()
            let order: [LockUse] = [
                .lock(namedLock("A")), .recursiveLock(RecursiveLock()), .read(rw),
                .condition(Condition()), .conditionLock(ConditionLock(condition: 0), whenCondition: 0),
                .spinLock(SpinLock()), .synchronized(LockOrderToken()),
            ]
            runConcurrently(threadCount: 8) { index in
                for round in 0..<200 {
                    // Each thread and round takes a different subsequence of the one order.
                    let mask = (index &* 31 &+ round) % (1 << order.count)
                    let chosen = order.indices.filter { mask & (1 << $0) != 0 }.map { order[$0] }
                    holding(chosen[...])
                }
            }
            guard LockOrderChecking.isEnabled else { exit(5) }
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("re-entering a RecursiveLock or a synchronized object while holding another: no report")
    func reentry() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let recursive = RecursiveLock()
            recursive.name = "R"
            let a = namedLock("A")
            let x = LockOrderToken(), y = LockOrderToken()
            // R -> A; R taken again under A adds no A -> R (it cannot block).
            onNewThread {
                recursive.lock()
                a.lock()
                recursive.lock()
                guard recursive.tryLock(), recursive.lock(before: .now + .seconds(10)) else { exit(6) }
                recursive.unlock()
                recursive.unlock()
                recursive.unlock()
                a.unlock()
                recursive.unlock()
            }
            // x -> y; x again under y adds no y -> x.
            onNewThread { synchronized(x) { synchronized(y) { synchronized(x) { synchronized(y) {} } } } }
            // The consistent orders again, on another thread: still nothing to report.
            nestOnNewThread(.recursiveLock(recursive), .lock(a), .recursiveLock(recursive))
            nestOnNewThread(.synchronized(x), .synchronized(y))
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("unlocking out of order (lock A, lock B, unlock A, unlock B): no report, nothing left held")
    func unlockOutOfOrder() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B"), c = namedLock("C"), d = namedLock("D")
            let spin = SpinLock(), rw = ReadWriteLock()
            onNewThread {
                a.lock()
                b.lock()
                a.unlock()
                b.unlock()
                // Three of mixed kinds, released from the middle first.
                spin.lock()
                rw.lockWrite()
                a.lock()
                rw.unlockWrite()
                spin.unlock()
                a.unlock()
                // Nothing is held now: C -> D is the only edge this adds (a lock left on the
                // held list would add an edge from it to D, which the next thread inverts).
                c.lock()
                d.lock()
                d.unlock()
                c.unlock()
            }
            nestOnNewThread(.lock(d), .lock(a))
            nestOnNewThread(.lock(d), .lock(b))
            nestOnNewThread(.lock(d), .spinLock(spin))
            nestOnNewThread(.lock(d), .write(rw))
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("70 locks held at once (more than the 64 checked): no report, and none left held after")
    func deeperThanTheHeldList() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let locks = (0..<70).map { namedLock("L\($0)") }
            let z = namedLock("Z")
            onNewThread {
                holding(locks.map { .lock($0) }[...])
                // Nothing is held now: Z gets no edge from any of them.
                z.lock()
                z.unlock()
            }
            nestOnNewThread(.lock(z), .lock(locks[0]))
            nestOnNewThread(.lock(z), .lock(locks[63]))
            nestOnNewThread(.lock(z), .lock(locks[69]))
            // The order of the 70 again, on another thread: consistent.
            onNewThread { holding(locks.map { .lock($0) }[...]) }
        }
        expectLockOrderOutput(result, reports: 0)
    }

    @Test("after unlocking out of order, edges come from the lock still held, not the one released")
    func unlockOutOfOrderKeepsTheRightLockHeld() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), b = namedLock("B"), c = namedLock("C")
            onNewThread {
                a.lock()
                guard b.tryLock() else { exit(5) }  // held, but no edge A -> B
                a.unlock()
                c.lock()  // B is held, A is not: the one edge is B -> C
                c.unlock()
                b.unlock()
            }
            nestOnNewThread(.lock(c), .lock(a))  // no A -> C, so no cycle
            writeToStandardError("child: C -> A done")
            nestOnNewThread(.lock(c), .lock(b))  // closes B -> C -> B
        }
        expectLockOrderOutput(
            result, reports: 1, contains: ["Lock \"B\"", "Lock \"C\"", "closing a cycle of 2 locks"])
        if let text = lockOrderStandardError(result), let marker = text.range(of: "child: C -> A done") {
            #expect(!text[..<marker.lowerBound].contains(lockOrderReportHeader), "stderr:\n\(text)")
        }
    }
}
#endif
