// Misuse of Once and Lazy traps with a message naming the primitive and the mistake: a call
// from inside the body on the thread that runs it (which would otherwise wait for itself
// forever), with and without other callers asleep; and a futex wait the kernel refuses names
// the primitive. Each case runs in a child process (a Swift Testing exit test) that must exit
// with a failure and print the message on standard error. The misuse runs on a thread of its
// own while the child's main thread waits a bound that only a hang reaches, then exits 0: a
// broken check fails the test instead of hanging it.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("Once and Lazy: misuse traps with a message")
struct OnceTrapTests {
    @Test("Once.run(_:) called from its own body traps")
    func onceRecursion() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _misuseChild {
                let once = Once()
                once.run { once.run {} }
            }
        }
        expectTrapMessage(result, contains: "Once: run(_:) called recursively from its own body")
    }

    @Test("Once.run(_:) called from its own body traps while other callers sleep on it")
    func onceRecursionWithSleepers() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _misuseChild {
                let once = Once()
                once.run {
                    let sleeper = OverlappingCallers(count: 1) { _ in once.run {} }
                    guard sleeper.waitUntilAllAsleep() else { exit(4) }
                    once.run {}
                }
            }
        }
        expectTrapMessage(result, contains: "Once: run(_:) called recursively from its own body")
    }

    @Test("a cycle of Once objects on one thread traps")
    func onceRecursionThroughAnotherOnce() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _misuseChild {
                let first = Once(), second = Once()
                first.run { second.run { first.run {} } }
            }
        }
        expectTrapMessage(result, contains: "Once: run(_:) called recursively from its own body")
    }

    @Test("Lazy.value read from its own make closure traps")
    func lazyRecursion() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _misuseChild {
                let holder = LockGuarded<Lazy<Int>?>(nil)
                let lazy = Lazy<Int> { holder.value!.value + 1 }
                holder.value = lazy
                _ = lazy.value
            }
        }
        expectTrapMessage(result, contains: "Lazy: value read recursively from its own initializer")
    }

    #if os(Linux) && (arch(x86_64) || arch(arm64))
    @Test("Once: a futex wait the kernel refuses traps, naming Once and the errno")
    func onceRefusedWait() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let once = Once()
            let running = AtomicBool(false)
            _ = TestThread {
                once.run {
                    running.store(true)
                    _ = lockEventually(within: .seconds(60)) { false }  // outlives the child
                }
            }
            guard lockEventually(within: .seconds(60), { running.load() }) else { exit(4) }
            _refusedFutexWaitChild(once._word) { once.run {} }
        }
        expectTrapMessage(result, contains: "Once: futex wait failed with errno \(EPERM)")
    }

    @Test("Lazy: a futex wait the kernel refuses traps, naming Lazy and the errno")
    func lazyRefusedWait() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let running = AtomicBool(false)
            let lazy = Lazy<Int> {
                running.store(true)
                _ = lockEventually(within: .seconds(60)) { false }  // outlives the child
                return 0
            }
            _ = TestThread { _ = lazy.value }
            guard lockEventually(within: .seconds(60), { running.load() }) else { exit(4) }
            _refusedFutexWaitChild(lazy._word) { _ = lazy.value }
        }
        expectTrapMessage(result, contains: "Lazy: futex wait failed with errno \(EPERM)")
    }
    #endif
}

/// Runs `misuse` on a thread of its own and exits 0 once it returns, or after a bound that only
/// a hang reaches: the trap must end the child first.
private func _misuseChild(_ misuse: @escaping @Sendable () -> Void) -> Never {
    let finished = AtomicBool(false)
    _ = TestThread {
        misuse()
        finished.store(true)
    }
    _ = lockEventually(within: .seconds(60)) { finished.load() }
    exit(0)
}

#if os(Linux) && (arch(x86_64) || arch(arm64))
/// Runs `body` on a thread whose futex waits on `word` the kernel refuses with EPERM, and exits
/// 0 when it returns or after a bound that only a hang reaches.
private func _refusedFutexWaitChild(_ word: UnsafeMutablePointer<UInt32>, _ body: @escaping @Sendable () -> Void)
    -> Never
{
    nonisolated(unsafe) let word = word
    _misuseChild {
        let operations = [_Seccomp.futexWaitPrivate, _Seccomp.futexWaitBitsetPrivate]
        guard _Seccomp.failFutex(on: word, operations, with: EPERM) == 0 else { exit(3) }
        body()
    }
}
#endif
