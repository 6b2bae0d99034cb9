// synchronized(_:_:): Objective-C's `@synchronized(object) { ... }` for Swift, without
// Foundation, Dispatch or pthread mutexes.
//
// What it is: a recursive lock that every class instance has implicitly, taken for the length
// of a closure. The locks live in a table of per-object records keyed by the object's address
// (SynchronizedTable.swift has the algorithm, its states, invariants and memory orderings);
// this file is the entry point and the per-thread shortcut for re-entry.
//
// Why the object is kept alive with `withExtendedLifetime`: the record is keyed by the
// object's address, and the optimizer may end a value's lifetime after its last use — here the
// computation of the address, once this function is inlined into its caller. An object freed
// while its record is held would let a new object at the same address share the record: two
// unrelated objects under one lock, which the table's invariants (no sharing, no deadlock
// between distinct objects) rule out only while every holder keeps its object alive.

import CInterlock

/// Runs `body` while holding the lock that `object` carries implicitly: Objective-C's
/// `@synchronized(object) { ... }`.
///
/// Every class instance can serve as a lock without storing one: a thread entering
/// `synchronized(x)` waits while another thread is inside `synchronized(x)` for the same
/// instance `x`, and the lock is released when `body` returns or throws.
///
/// - Re-entrant: a thread inside `synchronized(x)` may call `synchronized(x)` again, at any
///   depth; the inner call runs at once.
/// - Per object: two different objects never share a lock, so threads on distinct objects never
///   wait for each other, and code that nests distinct objects in opposite orders on different
///   threads deadlocks only if those objects themselves are locked in a cycle (as with any
///   locks, lock nested objects in one global order to rule that out).
/// - Memory: the lock of an object exists only while some thread holds or waits on it; the
///   memory behind it is reused for other objects, so locking millions of distinct objects
///   does not grow the process.
/// - Cost: uncontended, a bucket of a table is locked briefly to find the object's lock,
///   which is then taken and later released, and a count of its users goes up and down: a few
///   atomic operations more than a ``RecursiveLock``. Re-entry costs a look at a per-thread
///   stack of held objects. Waiters spin briefly, then sleep in the kernel, as with ``Lock``.
///   For a hot lock, a ``Lock`` stored next to the data it guards is cheaper.
///
/// - Parameter object: The instance whose identity names the lock. It is kept alive for the
///   call.
/// - Parameter body: The critical section.
/// - Returns: What `body` returns.
/// - Note: Not fair: a thread leaving `synchronized(x)` can enter it again ahead of threads
///   that wait, as with ``Lock``.
/// - Note: Unlike `@synchronized(nil)`, which runs its body unlocked, an object is required.
/// - Warning: Pass a class instance. A value converted with `as AnyObject` is boxed afresh by
///   every conversion, so two calls would lock two different boxes and exclude nothing.
@inlinable
public func synchronized<R>(_ object: AnyObject, _ body: () throws -> R) rethrows -> R {
    try withExtendedLifetime(object) {
        let key = UInt(bitPattern: ObjectIdentifier(object))
        // The calling thread holds `object` already (invariant 6, SynchronizedTable.swift).
        if ilk_sync_held_contains(key) { return try body() }
        let record = _SynchronizedTable.acquire(key)
        defer { _SynchronizedTable.release(record) }
        return try body()
    }
}
