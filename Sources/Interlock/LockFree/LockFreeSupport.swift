// Shared pieces of the lock-free stack and queue: the RCU read-side section, the cache-padded
// block that holds a structure's hot pointers, and the typed views of raw pointer words.
//
// Reclamation, in one paragraph (details in CShims/include/ilk_rcu.h): every dereference of a
// node or segment that another thread could unlink and retire happens between
// `ilk_rcu_read_lock()` and `ilk_rcu_read_unlock()` (liburcu's urcu-bp flavor; ~1 ns per pair,
// no registration needed). A thread that unlinks a block retires it with `ilk_rcu_retire`,
// which frees it only after a grace period, i.e. after every read-side section that might have
// loaded a pointer to it has ended. So no block is freed while referenced (no use-after-free).
// The queue also never reuses an address while a thread could still compare against it (no
// ABA); the stack does reuse its nodes at once, and a generation count on its head makes the
// stale compare-and-swap fail instead (LockFreeStack.swift, "ABA").
//
// fork() without exec: the child has only the thread that forked, and liburcu's worker thread
// (which frees retired blocks) is not among them. Creating a structure installs, once per
// process, the pthread_atfork handlers that make liburcu start a new worker in the child and
// forget the readers that did not survive (CShims/ilk_rcu.c), so the child may go on using
// every stack and queue. It loses only the blocks the vanished threads had cached.

import CInterlock

/// Cache-line size used for padding: 128 bytes, the unit of the adjacent-line prefetcher on
/// x86-64 and the line size of recent arm64 cores (crossbeam's `CachePadded` makes the same
/// choice).
@usableFromInline internal let _lockFreeLineSize = 128

/// Two pointer-sized atomic words, each alone on its own 128-byte line, in one heap block at a
/// stable address (so Swift's exclusivity checking never sees the accesses, and the words
/// never share a line with the owning object's header or with each other).
@frozen @usableFromInline
internal struct _PaddedWords {
    /// The 256-byte, 128-aligned block: word 0 at offset 0, word 1 at offset 128.
    @usableFromInline internal let base: UnsafeMutableRawPointer

    @inlinable
    internal init() {
        // Every stack and queue starts here, before its first read-side section: the place
        // to make RCU fork-safe (see the file comment). A pthread_once check after the first.
        ilk_rcu_install_fork_handlers()
        base = ilk_block_alloc_zeroed(2 * _lockFreeLineSize, _lockFreeLineSize)
    }

    /// The first word (a stack's head, a queue's head). A stack keeps its head's generation
    /// count in the word after it, at offset 8: the pair is 16-byte aligned, as the double-width
    /// compare-and-swap requires.
    @inlinable @inline(__always)
    internal var first: UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        base.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    /// The second word, one line further (a queue's tail).
    @inlinable @inline(__always)
    internal var second: UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (base + _lockFreeLineSize).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    /// Frees the block; only from the owner's deinit.
    @inlinable
    internal func deallocate() {
        ilk_block_free(base)
    }
}

/// The largest power of two not above `value` (which must be positive).
@inlinable @inline(__always)
internal func _floorPowerOfTwo(_ value: Int) -> Int {
    1 &<< (Int.bitWidth &- 1 &- value.leadingZeroBitCount)
}

/// Rounds `value` up to a multiple of `alignment` (a power of two).
@inlinable @inline(__always)
internal func _roundUp(_ value: Int, toMultipleOf alignment: Int) -> Int {
    (value + alignment - 1) & ~(alignment - 1)
}

/// Exponential backoff after a failed compare-and-swap on a contended word: a thread whose CAS
/// lost waits a little longer each time before it retries, so that the line holding the word
/// stays with one core for several operations instead of moving on every attempt. Never
/// waits for another thread (no lock-freedom is lost): it only delays the retry.
@frozen @usableFromInline
internal struct _LockFreeBackoff {
    @usableFromInline internal var rounds: UInt32 = 1

    @inlinable @inline(__always)
    internal init() {}

    /// Pauses `rounds` times, then doubles `rounds` up to `_lockFreeMaxBackoff`.
    @inlinable @inline(__always)
    internal mutating func pause() {
        for _ in 0..<rounds { ilk_spin_pause() }
        if rounds < _lockFreeMaxBackoff { rounds &<<= 1 }
    }
}

/// The longest backoff, in `ilk_spin_pause` rounds (see `_LockFreeBackoff`).
@usableFromInline internal let _lockFreeMaxBackoff: UInt32 = 32
