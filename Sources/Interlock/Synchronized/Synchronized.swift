// synchronized(_:_:): Objective-C's `@synchronized(object) { ... }` for Swift, without
// Foundation, Dispatch or pthread mutexes.
//
// What it is: a recursive lock that every class instance has implicitly, taken for the length
// of a closure. The locks live in a table of per-object records keyed by the object's address
// (SynchronizedTable.swift has the algorithm, its states, invariants and memory orderings);
// this file is the entry point and the per-thread shortcut for re-entry.
//
// Why the object is kept alive (`_fixLifetime` after the release): the record is keyed by the
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
/// - Memory: once no thread holds or waits on an object's lock, the memory behind it may be
///   reused for other objects (or given back), so locking millions of distinct objects does
///   not grow the process.
/// - Cost: uncontended, the object's lock is found in a table without taking any lock (when
///   the object was locked recently) and taken with one atomic compare-and-swap, and released
///   with another: about a ``RecursiveLock``'s cost plus a hash and a short list walk. An
///   object locked for the first time takes a small lock of the table once. Re-entry costs a
///   look at a per-thread stack of held objects. Waiters spin briefly, then sleep in the
///   kernel, as with ``Lock``. For a hot lock, a ``Lock`` stored next to the data it guards is
///   cheaper.
///
/// - Parameters:
///   - object: The instance whose identity names the lock. It is kept alive for the
///     call.
///   - body: The critical section.
/// - Returns: What `body` returns.
/// - Note: Not fair: a thread leaving `synchronized(x)` can enter it again ahead of threads
///   that wait, as with ``Lock``.
/// - Note: Unlike `@synchronized(nil)`, which runs its body unlocked, an object is required.
/// - Warning: Pass a class instance. A value converted with `as AnyObject` is boxed afresh by
///   every conversion, so two calls would lock two different boxes and exclude nothing.
/// - Important: Across `fork()` without exec, as with ``RecursiveLock``: the child's one thread
///   has a new thread id, so a `fork()` inside `body` leaves the child inside a section that,
///   for the table, belongs to the parent's thread. The child traps when it leaves `body`, with
///   a message that names the fork. Fork outside `synchronized`, or exec at once in the child.
@inlinable
public func synchronized<R>(_ object: AnyObject, _ body: () throws -> R) rethrows -> R {
    // Runs last (defers run in reverse order), after the release below: `object` stays alive
    // until its record is released. `_fixLifetime` rather than `withExtendedLifetime`, whose
    // generic body the optimizer left as a call (5-10 ns per synchronized call, half the
    // uncontended cost, in the nested-twice benchmark).
    defer { _fixLifetime(object) }
    let key = UInt(bitPattern: ObjectIdentifier(object))
    // The calling thread holds `object` already (invariant 7, SynchronizedTable.swift).
    if ilk_sync_held_contains(key) { return try body() }
    _LockOrder.willLock(object, .synchronized)
    let record = _SynchronizedTable.acquire(key)
    _LockOrder.didLock(object, .synchronized)
    defer {
        _LockOrder.didUnlock(object)
        _SynchronizedTable.release(record)
    }
    return try body()
}
