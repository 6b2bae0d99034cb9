// Threads, a start line and exit-test helpers for the OSAtomic, OSSpinLock, os_unfair_lock and
// OSAllocatedUnfairLock tests. Names carry a `compat` prefix: this test target is shared with
// other suites, which may keep helpers of their own.
//
// Real pthreads, not Swift concurrency's pool (as many threads as cores, which must not
// block): `compatRunThreads` starts every thread, holds them at a barrier until all exist,
// releases them together and joins them all, so everything they wrote happens-before the
// caller's next line (pthread_join synchronizes).

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A started OS thread running a closure; `join()` waits for it to finish.
final class CompatTestThread: @unchecked Sendable {
    // Written once by pthread_create before anyone reads it; read only by join().
    private var handle = pthread_t()

    /// Starts a thread running `body`; traps when the system cannot create one.
    init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(CompatThreadBody(body)).toOpaque()
        let rc = pthread_create(
            &handle, nil,
            { raw in
                Unmanaged<CompatThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, box)
        guard rc == 0 else { fatalError("CompatTestThread: pthread_create failed with error \(rc)") }
    }

    /// Waits until the thread has finished. Call exactly once.
    func join() {
        let rc = pthread_join(handle, nil)
        guard rc == 0 else { fatalError("CompatTestThread: pthread_join failed with error \(rc)") }
    }
}

private final class CompatThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Runs `body(index)` on `count` threads released together, and joins them all.
func compatRunThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)
    defer { barrier.deallocate() }
    guard pthread_barrier_init(barrier, nil, UInt32(count)) == 0 else { fatalError("pthread_barrier_init failed") }
    defer { pthread_barrier_destroy(barrier) }
    nonisolated(unsafe) let start = barrier
    let threads = (0..<count).map { index in
        CompatTestThread {
            _ = pthread_barrier_wait(start)
            body(index)
        }
    }
    for thread in threads { thread.join() }
}

/// A flag for one thread to tell another something, with acquire/release ordering.
final class CompatFlag: @unchecked Sendable {
    private let value = AtomicBool(false)
    /// Raises the flag (release).
    func raise() { value.store(true) }
    /// Whether the flag is raised (acquire).
    var isRaised: Bool { value.load() }
    /// Waits until the flag is raised, or `seconds` have passed; returns whether it was.
    @discardableResult
    func wait(seconds: Int = 60) -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !isRaised {
            if ContinuousClock.now >= deadline { return false }
            usleep(100)
        }
        return true
    }
}

/// In an exit test's child: runs `misuse` on a thread of its own and exits 0 once it returns,
/// or after a bound that only a hang reaches. The trap must end the child first.
func compatMisuseChild(_ misuse: @escaping @Sendable () -> Void) -> Never {
    let finished = CompatFlag()
    _ = CompatTestThread {
        misuse()
        finished.raise()
    }
    finished.wait(seconds: 60)
    exit(0)
}

/// Checks that an exit test's child printed `fragment` on standard error.
func compatExpectStderr(
    _ result: ExitTest.Result?, contains fragment: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let result else { return }  // the exit-status expectation has already failed
    let text = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(
        text.contains(fragment), "stderr should contain \"\(fragment)\"; it was:\n\(text)",
        sourceLocation: sourceLocation)
}

/// Polls `condition` every millisecond until it holds, or until `seconds` have passed (a bound
/// that only a hang reaches); returns whether it held.
func compatPoll(seconds: Int = 60, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        usleep(1_000)
    }
    return true
}

/// The scheduler state of this process's thread `tid`: the third field of
/// /proc/self/task/<tid>/stat ("R" running, "S" asleep in the kernel, ...), or nil when the
/// file cannot be read. The second field, the command name in parentheses, may itself contain
/// spaces and parentheses, so the state is found after the last ")".
func compatThreadState(_ tid: UInt32) -> Character? {
    let descriptor = open("/proc/self/task/\(tid)/stat", O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes = [UInt8](repeating: 0, count: 1_024)
    let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard count > 0, let parenthesis = bytes[..<count].lastIndex(of: UInt8(ascii: ")")),
        parenthesis + 2 < count, bytes[parenthesis + 1] == UInt8(ascii: " ")
    else { return nil }
    return Character(Unicode.Scalar(bytes[parenthesis + 2]))
}

/// Waits (bounded, see `compatPoll`) until a thread has published its kernel thread id in
/// `id` (non-zero), and returns it; 0 when it never did.
func compatPublishedThreadID(_ id: AtomicUInt32) -> UInt32 {
    _ = compatPoll { id.load() != 0 }
    return id.load()
}
