// swift-format-ignore-file: AlwaysUseLowerCamelCase, TypeNamesShouldBeCapitalized
// os_unfair_lock: Apple's unfair lock (<os/lock.h>) with the Swift signatures of Darwin's SDK
// import, as a futex lock whose word records its owner, so that misuse is caught as on Darwin.
//
// State word (`_os_unfair_lock_opaque`, 32 bits):
//
//   bits      meaning
//   --------  -------------------------------------------------------------------------------
//   31        WAITERS: set while threads MAY be parked on the word (unlock must wake one)
//   0...30    the owner's kernel thread id (ilk_current_thread_id, never 0); 0 when free
//
//   value          meaning
//   -------------  ---------------------------------------------------------------------
//   0              free (OS_UNFAIR_LOCK_INIT)
//   tid            held by thread `tid`, nobody parked
//   tid | WAITERS  held by thread `tid`, threads may be parked
//   WAITERS        never (a free lock has no WAITERS bit: unlock writes 0)
//
// Linux thread ids are below 2^22 (PID_MAX_LIMIT), so an id never reaches the WAITERS bit.
//
// Transitions:
//   lock, fast path   CAS 0 -> tid (acquire)
//   lock, slow path   loop: read the word (relaxed);
//                       0                -> CAS 0 -> tid | WAITERS (acquire): the thread
//                                           cannot know whether others still sleep, so it
//                                           keeps the "maybe" (Drepper's mutex 3)
//                       owner == tid     -> trap: recursive lock attempt
//                       WAITERS clear    -> CAS v -> v | WAITERS (relaxed), retry on failure
//                       WAITERS set      -> futex-wait while the word is v
//   trylock           CAS 0 -> tid (acquire); never waits, never traps
//   unlock            read (relaxed): owner != tid -> trap; else exchange 0 (release), and
//                     if the old value had WAITERS, futex-wake one thread
//   assert_owner      read (relaxed): owner != tid -> trap
//   assert_not_owner  read (relaxed): owner == tid -> trap
//
// Invariants:
//   - Only the owner writes a value whose owner field is not its own (unlock's 0); other
//     threads only add WAITERS to a held word or take a free one.
//   - A thread parks only on a word with WAITERS set (its futex wait names that value), and
//     an unlock that clears a word with WAITERS wakes one thread: no lost wake-up. A woken
//     thread takes the lock with WAITERS set again, so the next unlock wakes the next
//     sleeper. A thread arriving between an unlock and the woken thread's retry may take the
//     lock first (the lock is unfair, as Darwin's is by name); the woken thread then sets
//     WAITERS again and parks.
//   - The owner checks read the word relaxed: a thread that holds the lock reads its own id
//     (its own last write, or a later WAITERS bit added to it: coherence); a thread that
//     does not hold it can never read its own id, since only it writes that id.
//
// Memory ordering: every CAS that takes the lock (0 -> tid, 0 -> tid | WAITERS) is an
// acquire and pairs with the release exchange of the previous unlock, so the critical sections
// of successive owners are ordered. Setting WAITERS is relaxed: it takes nothing and publishes
// nothing, it only tells the owner to wake. Reads that decide whether to retry are relaxed: the
// CAS re-reads the word atomically. Futex calls are not synchronization edges.
//
// Differences from Darwin: no priority inheritance (Linux futexes without FUTEX_LOCK_PI); a
// lock held across fork() cannot be unlocked in the child, whose thread has another id (on
// Darwin too the child's thread is a different owner). The traps' messages follow Darwin's.

import CInterlock
import Synchronization

/// Apple's unfair lock: a 32-bit word, zero when unlocked. Declared as Darwin imports the C
/// `struct os_unfair_lock_s`; use it only at a stable address (a pointer you allocated, or
/// ``OSAllocatedUnfairLock``), never through `&` on a Swift variable that may move.
public struct os_unfair_lock_s: Sendable {
    /// The lock word: the owner's thread id and a waiters bit (the file comment).
    public var _os_unfair_lock_opaque: UInt32

    /// An unlocked lock (`OS_UNFAIR_LOCK_INIT`).
    public init() { _os_unfair_lock_opaque = 0 }

    /// A lock with the given word; pass 0 for an unlocked lock.
    public init(_os_unfair_lock_opaque: UInt32) { self._os_unfair_lock_opaque = _os_unfair_lock_opaque }
}

/// Apple's name for ``os_unfair_lock_s`` (the C typedef).
public typealias os_unfair_lock = os_unfair_lock_s

/// A pointer to an unfair lock, as the C typedef `os_unfair_lock_t`.
public typealias os_unfair_lock_t = UnsafeMutablePointer<os_unfair_lock_s>

/// Bit 31 of the word: threads may be parked (the file comment).
@usableFromInline internal let _unfairWaiters: UInt32 = 0x8000_0000

/// The lock word of `lock`.
@inlinable @inline(__always)
internal func _unfairWord(_ lock: UnsafePointer<os_unfair_lock_s>) -> UnsafeMutablePointer<UInt32> {
    // SAFETY: os_unfair_lock_s is a struct of one UInt32; the word is its whole storage. It is
    // only ever accessed atomically: Swift's builtins on the fast paths (_unfairAtomic), the C
    // shim's atomics on the slow ones.
    UnsafeMutableRawPointer(mutating: lock).assumingMemoryBound(to: UInt32.self)
}

/// The lock word viewed as a Swift atomic (the fast paths' builtins).
@inlinable @inline(__always)
internal func _unfairAtomic(_ word: UnsafeMutablePointer<UInt32>) -> UnsafeMutablePointer<Atomic<UInt32>> {
    // SAFETY: Atomic<UInt32> has UInt32's size, alignment and bits; the word is at a stable
    // address and only ever accessed atomically (these builtins, or the shim's atomics).
    UnsafeMutableRawPointer(word).assumingMemoryBound(to: Atomic<UInt32>.self)
}

/// Blocks until the calling thread holds `lock`.
///
/// Traps with "os_unfair_lock: recursive lock attempt" when the calling thread already
/// holds it (Darwin aborts with "Trying to recursively lock an os_unfair_lock").
@inlinable
public func os_unfair_lock_lock(_ lock: os_unfair_lock_t) {
    let word = _unfairWord(lock)
    let me = ilk_current_thread_id()
    // Acquire on success: pairs with the release exchange of the previous unlock. Relaxed on
    // failure: nothing is taken.
    // Builtin atomics on the fast paths: they stay inline in protocol witnesses, where calls to
    // the C shim do not (Interlock's WordAtomics.swift).
    if _slowPath(
        !_unfairAtomic(word).pointee.compareExchange(
            expected: 0, desired: me, successOrdering: .acquiring, failureOrdering: .relaxed
        ).exchanged)
    {
        _unfairLockSlow(word, me)
    }
}

/// Takes `lock` if it is free, without waiting.
/// - Returns: `true` when the calling thread now holds it; `false` when any thread holds it,
///   the calling thread included (no trap, as on Darwin).
@inlinable
public func os_unfair_lock_trylock(_ lock: os_unfair_lock_t) -> Bool {
    // Acquire on success: pairs with the release exchange of the previous unlock.
    _unfairAtomic(_unfairWord(lock)).pointee.compareExchange(
        expected: 0, desired: ilk_current_thread_id(), successOrdering: .acquiring, failureOrdering: .relaxed
    ).exchanged
}

/// Releases `lock`, which the calling thread must hold.
///
/// Traps with "os_unfair_lock: unlock of a lock not owned by the current thread" when it
/// does not hold it (unlocked, or held by another thread), as Darwin aborts.
@inlinable
public func os_unfair_lock_unlock(_ lock: os_unfair_lock_t) {
    let word = _unfairWord(lock)
    if _slowPath(!_unfairIsOwner(lock)) {
        _unfairTrap("os_unfair_lock: unlock of a lock not owned by the current thread")
    }
    // Release: pairs with the acquiring CAS of the next owner. The exchange also collects a
    // WAITERS bit set since the check above.
    if _slowPath(_unfairAtomic(word).pointee.exchange(0, ordering: .releasing) & _unfairWaiters != 0) {
        _unfairWake(word)
    }
}

/// Returns when the calling thread holds `lock`; traps with "os_unfair_lock_assert_owner: lock
/// not owned by the current thread" otherwise. Takes a `const` pointer, as the current SDK's
/// header declares it (a mutable pointer or `&lock` converts implicitly).
@inlinable
public func os_unfair_lock_assert_owner(_ lock: UnsafePointer<os_unfair_lock_s>) {
    if _slowPath(!_unfairIsOwner(lock)) {
        _unfairTrap("os_unfair_lock_assert_owner: lock not owned by the current thread")
    }
}

/// Returns when the calling thread does not hold `lock` (it is free or another thread holds
/// it); traps with "os_unfair_lock_assert_not_owner: lock owned by the current thread" when it
/// does. Takes a `const` pointer, as the current SDK's header declares it.
@inlinable
public func os_unfair_lock_assert_not_owner(_ lock: UnsafePointer<os_unfair_lock_s>) {
    if _slowPath(_unfairIsOwner(lock)) {
        _unfairTrap("os_unfair_lock_assert_not_owner: lock owned by the current thread")
    }
}

/// Whether the calling thread holds `lock`. Exact for the calling thread, whatever others do.
@inlinable @inline(__always)
internal func _unfairIsOwner(_ lock: UnsafePointer<os_unfair_lock_s>) -> Bool {
    // Relaxed: the owner reads its own id (its own last write, or that write with WAITERS
    // added); a non-owner never reads its own id (file comment, invariants). Orders nothing.
    _unfairAtomic(_unfairWord(lock)).pointee.load(ordering: .relaxed) & ~_unfairWaiters == ilk_current_thread_id()
}

/// The lock's waiting half: recursion check, WAITERS bit, futex wait (the file comment).
@usableFromInline @inline(never)
internal func _unfairLockSlow(_ word: UnsafeMutablePointer<UInt32>, _ me: UInt32) {
    var spins = 0
    while true {
        // Relaxed: decides the next step; the CASes below re-read the word atomically.
        let seen = ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
        if seen == 0 {
            // Acquire on success: pairs with the release exchange of the unlock that wrote 0.
            // Taken with WAITERS: others may still be parked (file comment).
            let marked = spins < _unfairSpinLimit ? me : me | _unfairWaiters
            if ilk_atomic_cas_value_u32(word, 0, marked, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == 0 { return }
            continue
        }
        if seen & ~_unfairWaiters == me {
            _unfairTrap("os_unfair_lock: recursive lock attempt")
        }
        // A short spin before parking: most critical sections are shorter than a futex round trip.
        if spins < _unfairSpinLimit {
            spins += 1
            for _ in 0..<(1 << min(spins, 6)) { ilk_spin_pause() }
            continue
        }
        if seen & _unfairWaiters == 0 {
            // Relaxed: takes nothing, publishes nothing; only tells the owner to wake.
            if ilk_atomic_cas_value_u32(word, seen, seen | _unfairWaiters, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED) != seen
            {
                continue
            }
        }
        let result = ilk_futex_wait(word, seen | _unfairWaiters, -1)
        if result < 0 {
            _unfairTrap("os_unfair_lock: futex wait failed with errno \(-result)")
        }
    }
}

/// Spin rounds (each 2, 4, ... 64 pauses) before a waiter parks. A thread that has parked
/// takes the lock with WAITERS set; a spinner that never parked takes it without.
@usableFromInline internal let _unfairSpinLimit = 6

/// Wakes one parked thread after an unlock that found WAITERS.
@usableFromInline @inline(never)
internal func _unfairWake(_ word: UnsafeMutablePointer<UInt32>) {
    let result = ilk_futex_wake(word, 1)
    if result < 0 {
        _unfairTrap("os_unfair_lock: futex wake failed with errno \(-result)")
    }
}

/// Traps with `message`. fatalError keeps its message in optimized builds (preconditionFailure
/// does not).
@usableFromInline @inline(never)
internal func _unfairTrap(_ message: String) -> Never {
    fatalError(message)
}
