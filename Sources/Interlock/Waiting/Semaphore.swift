// Semaphore: a counting semaphore, the heir of Dispatch's `dispatch_semaphore_t`, on one atomic
// counter and a FIFO list of sleeping waiters.
//
// Algorithm: the counter is Dispatch's (libdispatch's semaphore.c): a wait is one atomic
// decrement and a signal one atomic increment, and the kernel is involved only when the
// decrement finds no unit or the increment finds a waiter. Where Dispatch then sleeps on a
// kernel semaphore (any sleeper may take the next unit), a waiter here sleeps on a record of
// its own, queued in arrival order under an internal mutex, and a signal hands its unit to the
// first record (as ConditionLock hands its turn): units go to sleepers in FIFO order.
//
// The counter:
//
//   count >= 0   `count` units are free; nobody waits unmatched
//   count <  0   -count waiters have decremented and are not yet matched by a signal
//
//   wait     old = count--      old > 0: took a unit (fast path, done)
//                               old <= 0: committed: a unit will be handed to it (slow path)
//   signal   old = count++      old >= 0: the unit is free now (fast path, done)
//                               old < 0: matched one committed waiter: hand it a unit
//   tryWait  CAS count c -> c-1 while c > 0 (never commits)
//
// Tasks (Semaphore+Async.swift) commit by the same decrement and queue a record in the same
// list, holding a continuation instead of a futex word; the hand-off resumes it. A task that is
// cancelled or times out withdraws as a timed thread does, or, when a signal has already counted
// for it, stays queued as a ghost whose grant is passed on by a signal of the granting thread.
//
// The hand-off (slow paths, under `listLock`, a `_MutexWord`):
//   - a committed waiter takes a unit from `pending` if there is one; otherwise it queues a
//     record (on its own stack: word 0) at the tail, releases the lock, and waits for the word
//     to read 1: spinning for an adaptive window while few wait, then asleep on it
//     (HandOffWait.swift, shared with ConditionLock);
//   - a matching signal unlinks the head record and sets its word to 1 (waking it if it read
//     2), or, when no record is queued (its waiter has decremented but not queued yet), adds
//     one to `pending`;
//   - a waiter whose deadline passes takes the lock: a word of 1 means the unit was handed
//     over meanwhile (it returns true); otherwise it withdraws by a CAS count c -> c+1 while
//     c < 0, and unlinks its record. When it finds count >= 0, every committed waiter,
//     itself included, is matched by a signal that has counted but not yet handed over:
//     that signal will give a unit to each queued record in turn, so the waiter waits for its
//     own without a deadline (moments: the signal only needs the lock), as Dispatch's waiter
//     does when its undo finds the count non-negative.
//
// Invariants (under listLock):
//   - units matched but not yet handed = in-flight matching signals + pending; they never
//     exceed the committed waiters that are queued or about to queue, so `pending` is always
//     consumed and every queued record is granted (no lost wake-up, no lost unit);
//   - `pending > 0` only while no record is queued: a waiter about to queue consumes it first;
//   - a record is unlinked exactly once: by the signal that grants it or by its own thread on
//     withdrawal; its thread does not return before it is unlinked (it reads 1 only after
//     the grant, and withdraws under the lock), so no other thread touches its memory after,
//     bar a futex wake on its address (a private wake touches no page: at worst a spurious
//     wake-up of whatever sleeps there later).
//   - Fairness: a queued waiter is granted after at most as many matching signals as there
//     were records ahead of it, and a newcomer cannot take a unit from under it (while it is
//     unmatched the count is negative, so the newcomer commits and queues behind it). A
//     waiter between its decrement and its queuing (which includes taking listLock, so under
//     contention more than a few instructions) can be overtaken: by a thread that takes a
//     `pending` unit, or by a later waiter that reaches listLock first and queues ahead. The
//     overtaking is bounded by the waiters that committed meanwhile; no unit is lost either way.
//
// Decision: units go to the queued head, not to whichever thread asks first. Letting running
// threads barge in (Go's sync.Mutex; sem_t and Dispatch's kernel semaphore, where any waiter may
// take a posted unit) was built and measured (2026-11-28, 4 threads sharing 2 units, 9
// interleaved rounds of 500,000 operations per thread): a signal that found the head asleep left
// its unit in `pending` and woke the head to compete, with a direct hand-off after 1 ms of lost
// races. It made the pool slower, 13 -> 24 ns per operation with a few dozen multiply-adds held
// (DispatchSemaphore 17) and 34 -> 39 ns with one atomic increment held (Dispatch 27), and
// gained nothing beside a neighbour process (17 -> 20 ns; Dispatch 19): every lost race is a
// wake-up that takes a core from a preempted holder. So the hand-off stayed FIFO.
//
// Memory ordering (argued for AArch64 as for x86-64):
//   - count: the wait's decrement is acquire and the signal's increment release; the increment
//     heads a release sequence that later read-modify-writes of any thread continue, so a
//     fast-path wait that takes a unit synchronizes with the signal that freed it. A tryWait's
//     successful CAS is acquire, a failed one relaxed (nothing is taken). The withdrawal CAS
//     is relaxed: it happens under listLock, transfers no unit, and publishes nothing.
//   - record word: the signal's exchange to 1 is release, the waiter's load of 1 acquire: the
//     signaller's writes before signal() happen-before the waiter's return. The 0 -> 2 CAS is
//     relaxed on both sides: a failure means the word is 1 already, re-read with acquire.
//   - pending, head, tail, listed: plain fields under listLock (acquire/release of the mutex).
//   - count and the slow-path words live on different cache lines (128 bytes apart), so
//     waiters queued in the list do not slow the fast paths of others.

import CInterlock
import Synchronization

/// A waiter's record in the FIFO list: a thread's, on its own stack for the length of its wait,
/// or a task's, inside its `_SemaphoreTaskWaiter` object (Semaphore+Async.swift).
@usableFromInline
internal struct _SemaphoreWaiter {
    /// A thread's record: 0 waiting (spinning), 2 asleep on this word, 1 granted a unit.
    @usableFromInline var word: UInt32 = 0
    @usableFromInline var next: UnsafeMutablePointer<_SemaphoreWaiter>? = nil
    /// A task's record: its waiter object, retained by the list while queued; nil for a thread.
    @usableFromInline var task: Unmanaged<_SemaphoreTaskWaiter>? = nil
    @inlinable init() {}
}

/// The state of a ``Semaphore`` (see the file comment).
@usableFromInline
internal struct _SemaphoreState {
    @usableFromInline var count: Int64
    // Keeps the slow-path words 128 bytes away from `count` (the file comment).
    #if INTERLOCK_CONTENTION
    // swift-format-ignore
    @usableFromInline var _padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                     UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    /// Contention profiling: 0, or the address of the BoundedChannel this semaphore serves with
    /// its role in the low bits (Semaphore+Contention.swift). Written once, before sharing.
    @usableFromInline var contentionOwner: UInt = 0
    #else
    // swift-format-ignore
    @usableFromInline var _padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                     UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    #endif
    @usableFromInline var listLock: UInt32 = 0
    @usableFromInline var spinWindow: UInt32 = _AdaptiveSpin.initialWindow
    @usableFromInline var head: UnsafeMutablePointer<_SemaphoreWaiter>? = nil
    @usableFromInline var tail: UnsafeMutablePointer<_SemaphoreWaiter>? = nil
    @usableFromInline var pending: Int = 0
    @usableFromInline var queued: Int = 0

    @inlinable init(count: Int64) { self.count = count }
}

/// A counting semaphore: the heir of Dispatch's `DispatchSemaphore`.
///
/// It holds a number of units. `wait()` takes one, sleeping until one is free; ``signal()``
/// returns one, waking a waiter if any. Use it to regulate a finite resource (a pool of
/// connections: the initial value is the pool's size) or, with an initial value of 0, to let one
/// thread wait for an event another signals.
///
/// ```swift
/// let slots = Semaphore(value: 2)
/// slots.wait()
/// defer { slots.signal() }
/// useSharedResource()
/// ```
///
/// An uncontended `wait()` or ``signal()`` is one atomic instruction and no system call. A
/// thread that must wait spins briefly (when few wait and the cores are not oversubscribed), then
/// sleeps.
///
/// Fairness: FIFO among queued waiters. A waiter joins the queue under an internal lock, and
/// queued waiters get units in the order they joined; a thread arriving later cannot take a unit
/// ahead of a waiter already queued. A waiter that is still joining (between its decrement of the
/// count and its turn on that lock, which under contention includes waiting for the lock) can be
/// overtaken by waiters that commit meanwhile and reach the lock first, each of them once: never
/// for ever.
///
/// A signal publishes: whatever the signalling thread wrote before ``signal()`` is visible to
/// the thread whose wait takes that unit.
///
/// - Warning: `Semaphore(value:)` with a negative value traps.
public final class Semaphore: @unchecked Sendable {
    // Read and written only through the field pointers below after init; the first stored
    // property, so at a fixed offset of the object's one allocation.
    @usableFromInline internal var _storage: _SemaphoreState
    /// Tests only: called by a signal's hand-off before it takes listLock (set before use).
    internal var _handOffHook: (@Sendable () -> Void)?

    /// Creates a semaphore holding `value` units.
    /// - Parameter value: the units free at the start; 0 to wait for a signal.
    /// - Warning: A negative value traps with a message.
    public init(value: Int) {
        if value < 0 {
            _lockMisuse("Semaphore", name: nil, "init(value:) with a negative value (\(value))")
        }
        _storage = _SemaphoreState(count: Int64(value))
    }

    @inlinable @inline(__always)
    internal func _field<T>(_ field: KeyPath<_SemaphoreState, T>, as type: T.Type) -> UnsafeMutablePointer<T> {
        _stateField(of: self, field, as: type)
    }

    @inlinable @inline(__always) internal var _count: UnsafeMutablePointer<Int64> { _field(\.count, as: Int64.self) }
    @inlinable @inline(__always) internal var _listLock: UnsafeMutablePointer<UInt32> {
        _field(\.listLock, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _spinWindow: UnsafeMutablePointer<UInt32> {
        _field(\.spinWindow, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _head: UnsafeMutablePointer<UnsafeMutablePointer<_SemaphoreWaiter>?> {
        _field(\.head, as: UnsafeMutablePointer<_SemaphoreWaiter>?.self)
    }
    @inlinable @inline(__always) internal var _tail: UnsafeMutablePointer<UnsafeMutablePointer<_SemaphoreWaiter>?> {
        _field(\.tail, as: UnsafeMutablePointer<_SemaphoreWaiter>?.self)
    }
    @inlinable @inline(__always) internal var _pending: UnsafeMutablePointer<Int> { _field(\.pending, as: Int.self) }
    @inlinable @inline(__always) internal var _queued: UnsafeMutablePointer<Int> { _field(\.queued, as: Int.self) }

    /// The units free now: a snapshot, never negative (0 while threads wait).
    public var value: Int {
        // Relaxed: a snapshot that orders nothing.
        Int(Swift.max(ilk_atomic_load_i64(_count, ILK_ORDER_RELAXED), 0))
    }

    /// Takes a unit, sleeping until one is free.
    ///
    /// Blocks the calling thread: unavailable in async code, where `try await wait()` suspends
    /// the task instead.
    @available(*, noasync, message: "blocks the thread; use 'try await wait()', which suspends the task")
    @inlinable @inline(__always)
    public func wait() {
        // Acquire: pairs with the release increment of the signal that freed the unit. Swift's
        // atomics, not the shim's: an instruction in every caller, a protocol witness included
        // (Atomics/WordAtomics.swift).
        if _fastPath(_WordInt64.atomic(_count).pointee.wrappingSubtract(1, ordering: .acquiring).oldValue > 0) {
            return
        }
        _waitUntimed()
    }

    /// Takes a unit, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryWait()``.
    /// - Returns: `true` when the caller took a unit, `false` when the deadline passed first
    ///   (then it holds none).
    @available(*, noasync, message: "blocks the thread; use 'try await wait(before:)', which suspends the task")
    @inlinable
    public func wait(before deadline: ContinuousClock.Instant) -> Bool {
        if ContinuousClock.now >= deadline { return tryWait() }
        // Acquire: as in wait().
        if _fastPath(ilk_atomic_fetch_sub_i64(_count, 1, ILK_ORDER_ACQUIRE) > 0) { return true }
        return _waitSlow(deadline: deadline)
    }

    /// Takes a unit if one is free, without waiting.
    /// - Returns: `true` when the caller took a unit.
    @inlinable
    public func tryWait() -> Bool {
        let count = _count
        // Relaxed: the first guess of the CAS loop, which re-reads the word itself.
        var current = ilk_atomic_load_i64(count, ILK_ORDER_RELAXED)
        while current > 0 {
            // Acquire on success: as in wait(). Relaxed on failure: nothing is taken.
            let found = ilk_atomic_cas_value_i64(count, current, current - 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
            if found == current { return true }
            current = found
        }
        return false
    }

    /// Returns a unit: wakes the longest-waiting sleeper if any, else the unit is free.
    @inlinable @inline(__always)
    public func signal() {
        // Release: publishes the caller's writes to the thread that takes this unit. Swift's
        // atomics, as in wait().
        if _fastPath(_WordInt64.atomic(_count).pointee.wrappingAdd(1, ordering: .releasing).oldValue >= 0) {
            return
        }
        _handOff()
    }

    /// Returns `units` units at once (BoundedChannel's close): one atomic add, then a hand-off
    /// for each committed waiter the add matched (the file comment: each matching signal hands
    /// over one unit). Release: as in signal().
    @usableFromInline
    internal func _signal(units: Int64) {
        precondition(units > 0, "Semaphore: internal error, a bulk signal of \(units) units")
        let old = ilk_atomic_fetch_add_i64(_count, units, ILK_ORDER_RELEASE)
        if old >= 0 { return }
        for _ in 0..<Swift.min(units, -old) { _handOff() }
    }

    // MARK: - Slow paths

    /// A signal matched a committed waiter: grant the first queued record, or leave the unit
    /// in `pending` for the waiter that has not queued yet.
    @usableFromInline @inline(never)
    internal func _handOff() {
        _handOffHook?()
        _inject(.semaphoreHandOff)
        while true {
            _MutexWord.lock(_listLock, for: .semaphore)
            guard let first = _head.pointee else {
                _pending.pointee += 1
                _ = _MutexWord.unlock(_listLock, for: .semaphore)
                return
            }
            _unlink(first, after: nil)
            if let task = first.pointee.task {
                // A task's record: resume it, or pass the unit on if it was abandoned
                // (Semaphore+Async.swift). Takes over the list's reference.
                if _grant(task.takeRetainedValue()) { return }
                // Passing on is a signal of its own (this thread's, so release publishes what
                // the first signal published). Release: as in signal().
                if ilk_atomic_fetch_add_i64(_count, 1, ILK_ORDER_RELEASE) >= 0 { return }
                continue
            }
            let word = Semaphore._wordOf(first)
            // Release: pairs with the waiter's acquire load of 1; our last access to the record.
            let asleep = ilk_atomic_exchange_u32(word, 1, ILK_ORDER_RELEASE) == 2
            _ = _MutexWord.unlock(_listLock, for: .semaphore)
            if asleep { _Futex.wakeOne(word, for: .semaphore) }
            return
        }
    }

    /// `_waitSlow` without a deadline, for wait()'s inlined fast path.
    // Untimed: an inlined fast path that passed `deadline: nil` would build and destroy an
    // Optional<ContinuousClock.Instant> through its value witnesses on every call, fast path
    // included (ReadWriteLockSlowPaths.swift has the figure).
    @usableFromInline @inline(never)
    internal func _waitUntimed() { _ = _waitSlow(deadline: nil) }

    /// A wait whose decrement found no unit: committed; waits for the unit handed to it, or
    /// until `deadline` and withdraws (file comment). - Returns: whether it took a unit.
    @usableFromInline @inline(never)
    internal func _waitSlow(deadline: ContinuousClock.Instant?) -> Bool {
        #if INTERLOCK_CONTENTION
        let probe = _Contention.begin()
        let taken = _waitQueued(deadline: deadline)
        if probe != 0 && taken { _recordWait(probe, async: false) }
        return taken
        #else
        return _waitQueued(deadline: deadline)
        #endif
    }

    /// `_waitSlow`'s queueing and waiting.
    internal func _waitQueued(deadline: ContinuousClock.Instant?) -> Bool {
        _inject(.semaphoreCommitted)
        return withUnsafeTemporaryAllocation(of: _SemaphoreWaiter.self, capacity: 1) { buffer in
            // SAFETY: the record lives on this frame until the closure returns; it is queued
            // only between the enqueue and its grant or withdrawal, both of which unlink it
            // under listLock before this closure returns (file comment, invariants).
            let record = buffer.baseAddress!
            record.initialize(to: _SemaphoreWaiter())
            defer { record.deinitialize(count: 1) }
            let word = Semaphore._wordOf(record)
            let listLock = _listLock
            _MutexWord.lock(listLock, for: .semaphore)
            if _pending.pointee > 0 {
                _pending.pointee -= 1
                _ = _MutexWord.unlock(listLock, for: .semaphore)
                return true
            }
            if let last = _tail.pointee { last.pointee.next = record } else { _head.pointee = record }
            _tail.pointee = record
            _queued.pointee += 1
            // Spin only while at most one other thread waits: with more, spinners would take
            // the cores that the signalling threads need (AdaptiveSpin.swift).
            let spinning = _queued.pointee <= Int(_conditionSpinMaxWaiters)
            _ = _MutexWord.unlock(listLock, for: .semaphore)

            if !_HandOff.await(word, spinning: spinning, deadline: deadline, spinWindow: _spinWindow, for: .semaphore) {
                return true
            }

            // The deadline passed: granted meanwhile, withdraw, or wait for the grant in flight.
            _MutexWord.lock(listLock, for: .semaphore)
            // Relaxed: under listLock, which every grant is made under; acquire comes below.
            if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) != 1 && _withdraw() {
                _unlinkQueued(record)
                _ = _MutexWord.unlock(listLock, for: .semaphore)
                return false
            }
            _ = _MutexWord.unlock(listLock, for: .semaphore)
            // Granted, or a grant is on its way (count >= 0): take it.
            _ = _HandOff.await(word, spinning: false, deadline: nil, spinWindow: _spinWindow, for: .semaphore)
            return true
        }
    }

    /// Tests only: the records queued now (threads' and tasks', ghosts included).
    internal var _queuedSnapshot: Int {
        _MutexWord.lock(_listLock, for: .semaphore)
        defer { _ = _MutexWord.unlock(_listLock, for: .semaphore) }
        return _queued.pointee
    }

    /// Takes back a committed waiter's decrement (CAS count c -> c + 1 while c < 0), so that no
    /// signal is owed to it. Under listLock. - Returns: `false` when the count is not negative:
    /// every committed waiter, the caller included, is matched by a signal that has counted and
    /// will hand a unit over (the file comment), so the caller cannot withdraw.
    @usableFromInline
    internal func _withdraw() -> Bool {
        let count = _count
        // Relaxed (both): under listLock; no unit or data moves with the withdrawal.
        var current = ilk_atomic_load_i64(count, ILK_ORDER_RELAXED)
        while current < 0 {
            let found = ilk_atomic_cas_value_i64(count, current, current + 1, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
            if found == current { return true }
            current = found
        }
        return false
    }

    /// The futex word of `record` (a task's record carries its wait's outcome there).
    @inlinable @inline(__always)
    internal static func _wordOf(_ record: UnsafeMutablePointer<_SemaphoreWaiter>) -> UnsafeMutablePointer<UInt32> {
        UnsafeMutableRawPointer(record)
            .advanced(by: MemoryLayout<_SemaphoreWaiter>.offset(of: \.word)!)
            .assumingMemoryBound(to: UInt32.self)
    }

    /// Removes `record`, whose predecessor is `previous` (nil: the head). Under listLock.
    @usableFromInline
    internal func _unlink(
        _ record: UnsafeMutablePointer<_SemaphoreWaiter>, after previous: UnsafeMutablePointer<_SemaphoreWaiter>?
    ) {
        let next = record.pointee.next
        if let previous { previous.pointee.next = next } else { _head.pointee = next }
        if _tail.pointee == record { _tail.pointee = previous }
        record.pointee.next = nil
        _queued.pointee -= 1
    }

    /// Unlinks a record known to be queued (its thread withdraws). Under listLock.
    @usableFromInline
    internal func _unlinkQueued(_ record: UnsafeMutablePointer<_SemaphoreWaiter>) {
        var previous: UnsafeMutablePointer<_SemaphoreWaiter>? = nil
        var current = _head.pointee
        while let candidate = current, candidate != record {
            previous = candidate
            current = candidate.pointee.next
        }
        precondition(current != nil, "Semaphore: internal error, a withdrawing waiter's record is not queued")
        _unlink(record, after: previous)
    }
}
