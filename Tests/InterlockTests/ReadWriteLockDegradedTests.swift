// ReadWriteLock's degraded mode under preemption. The degraded lock's correctness must not rest
// on timing: an unlock that read the asymmetric mode just before the lock degraded and was then
// preempted between its decision and its store of P ("writers waiting: readers, stay out") may
// store P long after the last writer left, and wake nobody. The state that leaves is injected
// here directly — W = P with no writer registered, E clear, nobody woken — as that preempted
// unlock would leave it, with a reader that went to sleep BEFORE the lock degraded (an
// unbounded futex wait). The reader must still get in: degrading wakes every sleeper, and every
// sleeper of a degraded lock polls and clears a P that no writer is registered for.
// (Exclusion itself never depends on the fence mode: a reader's announcement and a writer's
// claim are seq_cst read-modify-writes followed by seq_cst loads in every mode; the degraded
// lock's exclusion under contention is checked in ReadWriteLockTests.)

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("ReadWriteLock: degraded mode under preemption")
struct ReadWriteLockDegradedTests {
    @Test("a reader asleep before the lock degrades gets in past a P stored late by a preempted unlock")
    func stalePendingAfterDegrade() {
        let lock = ReadWriteLock()
        guard !lock._core._symmetric else {
            Issue.record("membarrier is unavailable here: the lock starts symmetric and cannot degrade")
            return
        }
        lock.lockWrite()
        let tid = AtomicUInt32(0)
        let readerIn = AtomicBool(false)
        let reader = TestThread {
            tid.store(ilk_current_thread_id())
            lock.lockRead()  // sleeps behind the writer, in asymmetric mode: no poll
            readerIn.store(true)
            lock.unlockRead()
        }
        // Asleep for good: registered, flagged starving (after 1 ms it stops bounding its wait
        // to raise the flag), and in the kernel.
        #expect(
            lockEventually {
                let sr = ilk_atomic_load_u64(lock._core._sr, ILK_ORDER_SEQ_CST)
                return sr & _RW.sleeperCountMask == 1 && sr & _RW.starving != 0
                    && tid.load() != 0 && threadState(Int32(bitPattern: tid.load())) == "S"
            }, "the reader never went to sleep")
        // Another thread's membarrier fails: the lock degrades.
        lock._core._degrade()
        #expect(lock._core._degraded)
        // The preempted unlock's late store: P, with no writer registered, and no wake-up.
        ilk_atomic_store_u32(lock._core._entered, 0, ILK_ORDER_RELAXED)
        ilk_atomic_store_u32(lock._core._w, _RW.pending, ILK_ORDER_SEQ_CST)
        let entered = lockEventually(within: .seconds(30)) { readerIn.load() }
        #expect(entered, "the reader stayed asleep behind a stale P")
        if !entered {
            lock._core._clearPending()  // rescue it, so that the failing test ends
        }
        reader.join()
        #expect(ilk_atomic_load_u32(lock._core._w, ILK_ORDER_SEQ_CST) == 0)
        #expect(lock.tryLockWrite())
        lock.unlockWrite()
    }
}
