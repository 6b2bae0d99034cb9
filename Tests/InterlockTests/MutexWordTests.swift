// Tests of the futex mutex word's release (`_MutexWord.unlock`, ilk_mutex.h), shared by Lock,
// RecursiveLock, Condition and ConditionLock: the decrement classifies the old value exactly in
// both its forms (inline assembly on x86-64 Linux, the builtin elsewhere and under
// ThreadSanitizer), the form follows the sanitizer, an unlock that finds sleepers frees the word
// and wakes the one asleep on it, and an unlock of an unlocked word leaves it 0 (never corrupt)
// for the caller's trap.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("Mutex word")
struct MutexWordTests {
    @Test("the unlock's decrement classifies the old value of the word exactly, in both forms")
    func releaseClassifies() {
        let cases: [(old: UInt32, outcome: UInt32)] = [
            (1, ILK_MUTEX_RELEASED), (2, ILK_MUTEX_RELEASED_WAKE), (0, ILK_MUTEX_NOT_LOCKED),
        ]
        let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { word.deallocate() }
        let forms: [(String, (UnsafeMutablePointer<UInt32>) -> UInt32)] = [
            ("assembly", { ilk_mutex_release_asm($0) }), ("builtin", { ilk_mutex_release_builtin($0) }),
        ]
        for (form, release) in forms {
            for (old, outcome) in cases {
                word.initialize(to: old)
                #expect(release(word) == outcome, "\(form) form, old value \(old)")
                #expect(word.pointee == old &- 1, "\(form) form, old value \(old)")
            }
        }
    }

    #if os(Linux)
    /// ThreadSanitizer does not see inline assembly: a process with its runtime must take the
    /// builtin forms (the mutex's release, the read unlock's decrement), or those operations
    /// would be invisible to it; a process without it should not pay for the builtin forms on
    /// x86-64.
    @Test("the decrements use their assembly forms exactly when ThreadSanitizer's runtime is absent")
    func formFollowsSanitizer() {
        let process = dlopen(nil, RTLD_NOW)
        defer { if let process { dlclose(process) } }
        let sanitized = dlsym(process, "__tsan_init") != nil
        #if arch(x86_64)
        #expect(ilk_flag_asm_usable() == !sanitized)
        #else
        #expect(ilk_flag_asm_usable())  // the "assembly" forms are the builtin ones there
        #endif
    }
    #endif

    @Test("an unlock of an unlocked word reports it and leaves the word 0")
    func unlockOfUnlockedLeavesZero() {
        let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { word.deallocate() }
        word.initialize(to: 0)
        #expect(!_MutexWord.unlock(word, for: .test))
        #expect(word.pointee == 0)
        // And the mutex still works.
        #expect(_MutexWord.tryLock(word))
        #expect(_MutexWord.unlock(word, for: .test))
        #expect(word.pointee == 0)
    }

    @Test("the undo of such an unlock frees a word that a thread marked contended meanwhile")
    func undoReleasesContendedMark() {
        let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { word.deallocate() }
        for found in [UInt32.max, 2] {  // untouched, or a parker's exchange(2) came in between
            word.initialize(to: found)
            _MutexWord._undoUnlockOfUnlocked(word, .test)
            #expect(word.pointee == 0, "found \(found)")
        }
    }

    #if os(Linux)
    @Test("an unlock that finds a sleeper frees the word and wakes the thread asleep on it")
    func unlockWakesSleeper() {
        let lock = Lock()
        lock.lock()
        let waiterThread = AtomicInt(0)
        let waiterDone = AtomicBool(false)
        let waiter = TestThread {
            waiterThread.store(Int(ilk_current_thread_id()))
            lock.lock()
            waiterDone.store(true)
            lock.unlock()
        }
        // Relaxed: a look at the state. 2: the waiter spent its spin and marked the word.
        #expect(lockEventually { ilk_atomic_load_u32(lock._word, ILK_ORDER_RELAXED) == 2 })
        // Asleep in its futex wait (nothing else puts it to sleep), so that only a wake-up
        // can let it in.
        #expect(lockEventually { threadState(Int32(waiterThread.load())) == "S" })
        #expect(!waiterDone.load())
        lock.unlock()  // finds 2: must store 0 and wake the sleeper
        let woken = lockEventually { waiterDone.load() }
        #expect(woken, "the waiter was not woken by the unlock")
        if !woken { _ = _Futex.wakeOne(lock._word, for: .test) }  // rescue it, so that the failing test ends
        waiter.join()
        // Relaxed: the waiter was joined. It re-took the word as 2 and its unlock freed it.
        #expect(ilk_atomic_load_u32(lock._word, ILK_ORDER_RELAXED) == 0)
        #expect(lock.tryLock())
        lock.unlock()
    }
    #endif
}
