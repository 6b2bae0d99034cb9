// State shared between the reactor's thread, cancel threads and tasks, under Interlock's own Lock.
//
// Why not Synchronization.Mutex: its contended path runs in the standard library's
// uninstrumented code, so ThreadSanitizer misses the edge from one holder's unlock to the next
// holder's lock and reports the protected value as raced (seen with the reactor's registrations).
// Interlock's Lock tells ThreadSanitizer about its hand-offs (CShims' ilk_mutex), as the core's
// stress workloads under TSan rely on.

import Interlock

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
