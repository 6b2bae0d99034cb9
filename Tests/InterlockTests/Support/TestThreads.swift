// Real OS threads for concurrency tests, started together.
//
// Swift concurrency's cooperative pool has as many threads as cores (two here) and must not
// block, so tests that need threads to run truly in parallel — and to block in the kernel —
// use pthreads directly. `runConcurrently` starts every thread, holds them at a barrier until
// all exist, releases them at once (maximum contention) and joins them all before returning,
// so everything they wrote happens-before the caller's next line (pthread_join synchronizes).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A started OS thread running a closure; `join()` waits for it to finish.
final class TestThread: @unchecked Sendable {
    // Written once by pthread_create before anyone reads it; read only by join().
    private var handle: pthread_t

    /// Starts a thread running `body`. Traps (naming pthread_create and the error) when the
    /// system cannot create it: an environmental failure the test cannot work around.
    init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        #if canImport(Darwin)
        var created: pthread_t? = nil
        #else
        var created = pthread_t()
        #endif
        let rc = pthread_create(
            &created, nil,
            { raw in
                let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        precondition(rc == 0, "TestThread: pthread_create failed with error \(rc)")
        #if canImport(Darwin)
        handle = created!
        #else
        handle = created
        #endif
    }

    /// Waits until the thread has finished. Call exactly once.
    func join() {
        let rc = pthread_join(handle, nil)
        precondition(rc == 0, "TestThread: pthread_join failed with error \(rc)")
    }
}

private final class ThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// A reusable start line: `wait()` returns in every thread once `count` threads are waiting.
final class StartBarrier: @unchecked Sendable {
    // pthread_barrier_t must not move, so it lives in its own allocation.
    private let barrier: UnsafeMutablePointer<pthread_barrier_t>

    init(count: Int) {
        barrier = .allocate(capacity: 1)
        let rc = pthread_barrier_init(barrier, nil, UInt32(count))
        precondition(rc == 0, "StartBarrier: pthread_barrier_init failed with error \(rc)")
    }

    deinit {
        pthread_barrier_destroy(barrier)
        barrier.deallocate()
    }

    /// Blocks until `count` threads have called `wait()`.
    func wait() {
        let rc = pthread_barrier_wait(barrier)
        precondition(
            rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD,
            "StartBarrier: pthread_barrier_wait failed with error \(rc)")
    }
}

/// Runs `body(index)` on `threadCount` new OS threads (index 0..<threadCount) that start
/// together through a barrier, and returns once all have finished.
func runConcurrently(threadCount: Int, _ body: @escaping @Sendable (_ index: Int) -> Void) {
    precondition(threadCount > 0, "runConcurrently: threadCount must be positive")
    let start = StartBarrier(count: threadCount)
    let threads = (0..<threadCount).map { index in
        TestThread {
            start.wait()
            body(index)
        }
    }
    for thread in threads { thread.join() }
}
