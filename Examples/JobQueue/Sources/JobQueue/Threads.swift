// Plain OS threads. Workers block while they wait for work, and Swift concurrency's cooperative
// pool (one thread per core) must never block, so a worker pool like this one uses pthreads.

import Glibc

/// A started OS thread running a closure.
struct WorkerThread {
    private let handle: pthread_t

    /// Starts a thread running `body`; traps, naming the error, when the system cannot.
    init(_ body: @escaping @Sendable () -> Void) {
        // The closure travels to the new thread as a retained object; the thread releases it.
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var created = pthread_t()
        let rc = pthread_create(
            &created, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(rc == 0, "pthread_create failed: \(String(cString: strerror(rc)))")
        handle = created
    }

    /// Waits for the thread to finish. Everything it wrote is visible to the caller afterwards.
    func join() {
        let rc = pthread_join(handle, nil)
        precondition(rc == 0, "pthread_join failed: \(String(cString: strerror(rc)))")
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
