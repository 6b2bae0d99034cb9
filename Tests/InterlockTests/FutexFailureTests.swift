// A futex call that the kernel refuses for good (EPERM from a seccomp filter here; EFAULT,
// EINVAL or ENOSYS elsewhere) is an environmental failure, not a wake-up: the primitive traps,
// naming itself, the call and the errno, instead of spinning hot forever (a refused wait) or
// losing a wake-up (a refused wake). EINTR stays a spurious wake-up.
//
// Each trap runs in a child process (a Swift Testing exit test). The filter refuses the call
// for one futex word of one thread only, so the child's runtime keeps working. Without the fix
// a refused wait is retried forever: the child's main thread then exits 0 after a generous
// bound, and the test fails because the child did not trap.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux) && (arch(x86_64) || arch(arm64))
@Suite("Futex failures trap, naming the primitive and the errno")
struct FutexFailureTests {
    @Test("the shim reports a refused wait and wake as a negative errno, EINTR never")
    func shimReportsErrno() {
        nonisolated(unsafe) let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        word.initialize(to: 0)
        defer { word.deallocate() }
        let results = LockGuarded<[Int32]>([])
        let thread = TestThread {
            let ops = [_Seccomp.futexWaitPrivate, _Seccomp.futexWakePrivate, _Seccomp.futexCmpRequeuePrivate]
            guard _Seccomp.failFutex(on: word, ops, with: EPERM) == 0 else { return }
            results.value = [
                ilk_futex_wait(word, 0, -1), ilk_futex_wait(word, 0, 1_000),
                ilk_futex_wait_until(word, 0, ilk_clock_boottime_ns() + 1_000_000_000),
                ilk_futex_wake(word, 1), ilk_futex_requeue(word, 0, 1, word, 1),
            ]
        }
        thread.join()
        #expect(results.value == [-EPERM, -EPERM, -EPERM, -EPERM, -EPERM])
        // Unfiltered, a changed word is still told apart from a failure.
        #expect(ilk_futex_requeue(word, 1, 1, word, 1) == -EAGAIN)
        #expect(ilk_futex_wait(word, 1, -1) == ILK_FUTEX_VALUE_CHANGED)
    }

    @Test("Lock.lock() whose futex wait is refused traps instead of spinning")
    func lockWaitRefused() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = Lock()
            lock.lock()
            _refusedWaitChild(lock._word) { lock.lock() }
        }
        expectFutexTrap(result, "Lock: futex wait failed with errno \(EPERM)")
    }

    @Test("Lock.lock(before:) whose futex wait is refused traps")
    func timedLockWaitRefused() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = Lock()
            lock.lock()
            _refusedWaitChild(lock._word) { _ = lock.lock(before: .now + .seconds(600)) }
        }
        expectFutexTrap(result, "Lock: futex wait failed with errno \(EPERM)")
    }

    @Test("Lock.unlock() whose futex wake is refused traps instead of losing the wake-up")
    func unlockWakeRefused() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = Lock()
            lock.lock()
            // A sleeper on the word (state 2), then an unlock from a thread whose wakes fail.
            let waiterDone = AtomicBool(false)
            _ = TestThread {
                lock.lock(); lock.unlock(); waiterDone.store(true)
            }
            _ = lockEventually(within: .seconds(60)) { ilk_atomic_load_u32(lock._word, ILK_ORDER_RELAXED) == 2 }
            let unlocker = TestThread {
                guard _Seccomp.failFutex(on: lock._word, [_Seccomp.futexWakePrivate], with: EPERM) == 0 else { exit(3) }
                lock.unlock()
            }
            unlocker.join()
            // Not reached with the fix (the unlock traps). Without it the waiter's wake-up is
            // lost and it sleeps on: exit after a bound only a hang reaches.
            _ = lockEventually(within: .seconds(60)) { waiterDone.load() }
            exit(0)
        }
        expectFutexTrap(result, "Lock: futex wake failed with errno \(EPERM)")
    }

    @Test("Condition.wait() whose futex wait is refused traps, naming Condition")
    func conditionWaitRefused() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let condition = Condition()
            _refusedWaitChild(condition._futexWord) {
                condition.lock()
                condition.wait()
            }
        }
        expectFutexTrap(result, "Condition: futex wait failed with errno \(EPERM)")
    }

    @Test("ReadWriteLock.lockRead() whose futex wait is refused traps, naming ReadWriteLock")
    func readWriteLockWaitRefused() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = ReadWriteLock()
            lock.lockWrite()
            _refusedWaitChild(lock._core._rs) { lock.lockRead() }
        }
        expectFutexTrap(result, "ReadWriteLock: futex wait failed with errno \(EPERM)")
    }
}

/// In an exit test's child: runs `body` on a thread whose futex waits on `word` fail with EPERM,
/// and exits 0 (the test then fails) if the body returns or is still running after 60 s.
private func _refusedWaitChild(_ word: UnsafeMutablePointer<UInt32>, _ body: @escaping @Sendable () -> Void) -> Never {
    nonisolated(unsafe) let word = word
    let finished = AtomicBool(false)
    _ = TestThread {
        let ops = [_Seccomp.futexWaitPrivate, _Seccomp.futexWaitBitsetPrivate]
        guard _Seccomp.failFutex(on: word, ops, with: EPERM) == 0 else { exit(3) }
        body()
        finished.store(true)
    }
    // A bound that only a hang reaches: with the fix, the thread's trap ends the process first.
    _ = lockEventually(within: .seconds(60)) { finished.load() }
    exit(0)
}

/// Checks that the child's standard error carries the trap's message.
private func expectFutexTrap(
    _ result: ExitTest.Result?, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else { return }  // the exit-status expectation has already failed
    let text = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(
        text.contains(fragment), "stderr should contain \"\(fragment)\"; it was:\n\(text)",
        sourceLocation: sourceLocation)
    #expect(
        text.contains("Operation not permitted"), "stderr should carry strerror's text", sourceLocation: sourceLocation)
}
#endif
