// Locks across fork() (no exec), pinning what the doc comments say. The child's one thread has
// a new kernel thread id, so a RecursiveLock or Condition held at the fork (by any thread)
// belongs in the child to a thread that does not exist there: the child cannot take it
// (tryLock fails; lock() would wait forever) and its unlock() traps, naming the primitive,
// since the caller is not the owner. This is what glibc's recursive and error-checking mutexes
// do (their unlock fails with EPERM in the child). `Lock` records no owner: the child may
// unlock a Lock held at the fork, the pthread_atfork pattern of plain mutexes. A lock not held
// at the fork works in the child as anywhere.
//
// The trap cases run in an exit test's process, which takes the lock and forks; the trap
// happens in its child, whose standard error is the exit test's, and the exit test's process
// exits with 3 when that child died of a signal (the trap), with 10 + status otherwise.

import CInterlock
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The exit status of the trap tests' processes when their child died of a signal.
private let childTrapped: Int32 = 3

/// In an exit test's process: prints the id of the thread that takes the lock (for the
/// message check), runs `childBody` in a forked child, and exits with `childTrapped` when the
/// child died of a signal, 10 + its status when it exited, 2 when it hung.
private func exitWithForkedChildOutcome(_ childBody: () -> Int32) -> Never {
    let end = runInForkedChild(limit: .seconds(60), childBody)
    switch end {
    case .signaled: exit(childTrapped)
    case .exited(let status): exit(10 + status)
    case .hung: exit(2)
    }
}

/// Writes "holder=<thread id>;" on standard error (the trap tests find the id in the message).
private func announceHolder() {
    "holder=\(ilk_current_thread_id());".withCString { _ = write(2, $0, strlen($0)) }
}

/// The id announced by `announceHolder` in `text`.
private func announcedHolder(in text: String) -> String? {
    guard let start = text.range(of: "holder=") else { return nil }
    return String(text[start.upperBound...].prefix { $0 != ";" })
}

@Suite("Locks across fork()")
struct LockForkTests {
    @Test("a RecursiveLock held at fork() stays held in the child, whose unlock traps")
    func recursiveLockHeldAtFork() async {
        let result = await #expect(
            processExitsWith: .exitCode(childTrapped),
            observing: [\.standardErrorContent]
        ) {
            let lock = RecursiveLock()
            lock.name = "forked"
            announceHolder()
            lock.lock()
            exitWithForkedChildOutcome {
                // The owner is the parent's thread, which the child does not have.
                if lock.tryLock() { return 1 }
                if lock.lock(before: .now + .milliseconds(10)) { return 2 }
                lock.unlock()  // traps
                return 0
            }
        }
        guard let result else { return }
        let text = String(decoding: result.standardErrorContent, as: UTF8.self)
        let holder = announcedHolder(in: text) ?? "?"
        expectTrapMessage(
            result, contains: "RecursiveLock \"forked\"", "unlock() called by thread",
            "which does not own the lock (thread \(holder) does)")
    }

    @Test("a Condition held at fork() stays held in the child, whose unlock traps")
    func conditionHeldAtFork() async {
        let result = await #expect(
            processExitsWith: .exitCode(childTrapped),
            observing: [\.standardErrorContent]
        ) {
            let condition = Condition()
            condition.name = "forked"
            condition.lock()
            exitWithForkedChildOutcome {
                if condition.tryLock() { return 1 }
                condition.unlock()  // traps
                return 0
            }
        }
        expectTrapMessage(
            result, contains: "Condition \"forked\"",
            "unlock() called by a thread that does not hold the lock",
            "another thread holds it")
    }

    @Test("a Condition held at fork(): the child's wait traps too")
    func conditionWaitHeldAtFork() async {
        let result = await #expect(
            processExitsWith: .exitCode(childTrapped),
            observing: [\.standardErrorContent]
        ) {
            let condition = Condition()
            condition.lock()
            exitWithForkedChildOutcome {
                _ = condition.wait(until: .now + .milliseconds(10))  // traps
                return 0
            }
        }
        expectTrapMessage(
            result, contains: "Condition (unnamed)",
            "wait(until:) called by a thread that does not hold the lock",
            "another thread holds it")
    }

    @Test("a fork() inside a synchronized body: the child traps on leaving it, naming the fork")
    func forkInsideSynchronized() async {
        let result = await #expect(
            processExitsWith: .exitCode(childTrapped),
            observing: [\.standardErrorContent]
        ) {
            final class Guarded {}
            let object = Guarded()
            announceHolder()
            // The child returns from fork() inside the body and leaves it: the trap.
            let pid = synchronized(object) { fork() }
            if pid == 0 { _exit(0) }
            switch waitForChild(pid, limit: .seconds(60)) {
            case .signaled: exit(childTrapped)
            case .exited(let status): exit(10 + status)
            case .hung: exit(2)
            }
        }
        guard let result else { return }
        let text = String(decoding: result.standardErrorContent, as: UTF8.self)
        let holder = announcedHolder(in: text) ?? "?"
        expectTrapMessage(
            result, contains: "synchronized(_:_:): a section entered by thread \(holder) is left by thread",
            "fork() was called inside the body", "Fork outside synchronized")
    }

    @Test("a Lock held at fork() may be unlocked by the child, and then works")
    func lockHeldAtFork() {
        let lock = Lock()
        lock.lock()
        let end = runInForkedChild(limit: .seconds(60)) {
            if lock.tryLock() { return 1 }  // still held
            lock.unlock()  // no owner to check: the child releases the parent's hold
            guard lock.tryLock() else { return 2 }
            lock.unlock()
            guard lock.lock(before: .now + .seconds(10)) else { return 3 }
            lock.unlock()
            return 0
        }
        #expect(end == .exited(0))
        lock.unlock()  // the parent's hold is its own
    }

    @Test("locks not held at fork() work normally in the child")
    func locksNotHeldAtFork() {
        let lock = Lock()
        let recursive = RecursiveLock()
        let condition = Condition()
        // Used by this thread before the fork: owner fields written and cleared.
        lock.withLock {}
        recursive.withLock { recursive.withLock {} }
        condition.withLock {}
        let end = runInForkedChild(limit: .seconds(60)) {
            lock.lock()
            guard !lock.tryLock() else { return 1 }
            lock.unlock()

            recursive.lock()
            guard recursive.tryLock(), recursive.lock(before: .now + .seconds(10)) else { return 2 }
            recursive.unlock()
            recursive.unlock()
            recursive.unlock()
            guard recursive.tryLock() else { return 3 }
            recursive.unlock()

            condition.lock()
            _ = condition.wait(until: .now + .milliseconds(5))  // returns (timed out, or spuriously)
            condition.signal()
            condition.broadcast()
            condition.unlock()
            guard condition.tryLock() else { return 5 }
            condition.unlock()
            return 0
        }
        #expect(end == .exited(0))
    }
}
