// Locking: the protocol every Interlock mutex conforms to (SpinLock, Lock, RecursiveLock,
// Condition, ConditionLock), the heir of Foundation's NSLocking.
//
// `withLock` is the one way to use a lock that cannot forget to unlock: it is an extension
// method, so it is statically dispatched and, being `@inlinable`, specializes to a direct
// call of the concrete type's `lock()`/`unlock()` at the call site.

/// A lock that one thread at a time can hold: the heir of Foundation's `NSLocking`.
///
/// Prefer ``withLock(_:)``, which cannot leave the lock held when its body returns or throws.
///
/// - Warning: The thread that locks must be the one that unlocks. Unlocking a lock that the
///   caller does not hold is a programmer error; the conforming types that can detect it trap.
public protocol Locking: AnyObject, Sendable {
    /// Blocks until the calling thread holds the lock.
    func lock()
    /// Releases the lock, which the calling thread must hold.
    func unlock()
    /// Takes the lock if it is free at once, without waiting.
    /// - Returns: `true` when the calling thread now holds the lock.
    func tryLock() -> Bool
}

extension Locking {
    /// Runs `body` while holding the lock, and releases the lock when `body` returns or throws.
    ///
    /// Equivalent to `lock(); defer { unlock() }; return try body()`. The error is typed:
    /// `body`'s own error type (`Never` when it cannot throw, so no `try` is needed), and the
    /// result may be noncopyable. Callers written for the untyped, `rethrows` form compile
    /// unchanged: an untyped throwing body makes `E` `any Error`.
    /// - Parameter body: the critical section. It must not unlock the lock itself.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, after the lock has been released.
    @inlinable @inline(__always)
    public func withLock<R: ~Copyable, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
