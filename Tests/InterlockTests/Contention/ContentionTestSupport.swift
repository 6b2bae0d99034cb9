// What the contention profiling tests share: contended acquisitions made on purpose (a worker
// thread that must wait, because this thread holds the primitive until the worker sleeps in
// the kernel), and the checks of an exit test's child, which reports a failure on standard
// error and exits non-zero (an exit test cannot return a value to the parent).
//
// Every test runs in a child process (an exit test): INTERLOCK_CONTENTION is read once per
// process, so each child sets it before the first contended wait.

#if INTERLOCK_CONTENTION
import CInterlock
import Synchronization
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sets the profiling variables of this (child) process; call before any contended wait.
func setContention(_ value: String?, holdWarnMilliseconds: Int? = nil, report: String? = nil) {
    if let value { setenv("INTERLOCK_CONTENTION", value, 1) } else { unsetenv("INTERLOCK_CONTENTION") }
    if let holdWarnMilliseconds {
        setenv("INTERLOCK_HOLD_WARN_MS", String(holdWarnMilliseconds), 1)
    } else {
        unsetenv("INTERLOCK_HOLD_WARN_MS")
    }
    if let report { setenv("INTERLOCK_CONTENTION_REPORT", report, 1) } else { unsetenv("INTERLOCK_CONTENTION_REPORT") }
}

/// In an exit test's child: unless `condition`, writes `message` on standard error after the
/// marker `showChild` looks for, and ends the child. (It exits 0: `#expect(processExitsWith:)`
/// hands the parent the child's output only when the exit matched, and the message is the point.)
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if condition { return }
    let bytes = Array("\(childFailure)\(message())\n".utf8)
    _ = write(2, bytes, bytes.count)
    exit(0)
}

/// What `require` writes before a failure's message.
let childFailure = "contention test failed: "

/// In the parent: records the failure a child reported with `require`, with its message.
func showChild(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let result else { return }  // the exit did not match: #expect recorded it
    let text = String(decoding: result.standardErrorContent, as: UTF8.self)
    if let failure = text.split(separator: "\n").first(where: { $0.hasPrefix(childFailure) }) {
        Issue.record(Comment(rawValue: String(failure)), sourceLocation: sourceLocation)
    }
}

/// The turns of `forceContention`.
final class ContentionTurns: @unchecked Sendable {
    let turn = Atomic<Int>(-1)
    let done = Atomic<Int>(-1)
    let tid = Atomic<Int32>(0)
}

/// Makes `rounds` acquisitions by a new worker thread, each one contended: this thread takes
/// the primitive (`hold`), lets the worker try (`worker`, which must then wait), waits until the
/// worker sleeps in the kernel, and releases it (`release`). The worker exits before this returns.
func forceContention(
    rounds: Int, hold: () -> Void, release: () -> Void, worker: @escaping @Sendable () -> Void
) {
    let turns = ContentionTurns()
    let thread = TestThread {
        // Relaxed: the id is only compared with /proc's entries.
        turns.tid.store(Int32(bitPattern: ilk_current_thread_id()), ordering: .relaxed)
        for round in 0..<rounds {
            // Acquiring: pairs with the releasing store of the turn below.
            spinUntil { turns.turn.load(ordering: .acquiring) == round }
            worker()
            // Releasing: publishes the worker's round to the waiting thread.
            turns.done.store(round, ordering: .releasing)
        }
    }
    spinUntil { turns.tid.load(ordering: .relaxed) != 0 }
    let tid = turns.tid.load(ordering: .relaxed)
    for round in 0..<rounds {
        hold()
        // Releasing: pairs with the worker's acquiring load.
        turns.turn.store(round, ordering: .releasing)
        spinUntil { threadState(tid) == "S" }
        release()
        // Acquiring: pairs with the worker's releasing store.
        spinUntil { turns.done.load(ordering: .acquiring) == round }
    }
    thread.join()
}

/// `rounds` contended acquisitions of `lock` by a worker thread (forceContention).
func contendLock(_ lock: Lock, rounds: Int) {
    forceContention(
        rounds: rounds, hold: { lock.lock() }, release: { lock.unlock() },
        worker: {
            lock.lock()
            lock.unlock()
        })
}

/// The recorded waits of the sites of `kind` (and `lock`, when given) in `profile`.
func waits(_ profile: ContentionProfile, kind: String? = nil, lock: String? = nil) -> Int {
    profile.sites.filter { (kind == nil || $0.kind == kind) && (lock == nil || $0.lock == lock) }
        .reduce(0) { $0 + $1.contendedAcquisitions }
}

/// The site of `lock` and `kind` in `profile`, if any.
func site(_ profile: ContentionProfile, kind: String, lock: String? = nil) -> ContentionProfile.Site? {
    profile.sites.first { $0.kind == kind && (lock == nil || $0.lock == lock) }
}
#endif
