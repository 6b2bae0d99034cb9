// State shared between the reactor's thread, cancel threads and tasks, under Interlock's own Lock.
//
// Why not Synchronization.Mutex: its contended path runs in the standard library's
// uninstrumented code, so ThreadSanitizer misses the edge from one holder's unlock to the next
// holder's lock and reports the protected value as raced (seen with the reactor's registrations).
// Interlock's Lock tells ThreadSanitizer about its hand-offs (CShims' ilk_mutex), as the core's
// stress workloads under TSan rely on.

import Interlock
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value that is read and written only under its lock.
final class _PGProtected<Value>: @unchecked Sendable {
    // @unchecked: `value` is touched only inside `withLock`, under `lock`.
    private let lock = Lock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` on the value with the lock held.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// The resumption of a suspended task by another thread, in a form ThreadSanitizer can follow.
///
/// A continuation's resume() reads the task's continuation context, and the runtime then
/// enqueues the task through the concurrency runtime and Dispatch, which are not instrumented:
/// ThreadSanitizer does not see that edge, and reported the context's reuse by the task's next
/// suspension (the same slot of its async frame) as racing with the resumer's read (a CI run of
/// the reactor). So the resumer stores `resumed` with release after resume() has returned, and
/// the task, once running again, waits for that store with acquire before it goes on: an edge
/// it sees, covering resume() itself. The wait is a few instructions in practice (the resumer is
/// already past resume()); it yields the thread while the resumer has not got there.
final class _PGResumption: Sendable {
    private let resumed = Atomic<Bool>(false)

    /// Suspends the task; `register` receives the continuation and this object, and whoever
    /// resumes it (then, or later on another thread) calls `resume(_:)` on this object.
    static func suspend(_ register: (UnsafeContinuation<Void, Never>, _PGResumption) -> Void) async {
        let resumption = _PGResumption()
        await withUnsafeContinuation { register($0, resumption) }
        // Acquire: pairs with the release store in resume(_:).
        while !resumption.resumed.load(ordering: .acquiring) { sched_yield() }
    }

    /// Resumes `continuation` (once), then publishes that resume() has returned.
    func resume(_ continuation: UnsafeContinuation<Void, Never>) {
        continuation.resume()
        // Release: pairs with suspend's acquire load; orders resume()'s reads before the task's
        // next writes.
        resumed.store(true, ordering: .releasing)
    }
}
