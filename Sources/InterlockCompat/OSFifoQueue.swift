// swift-format-ignore-file: AlwaysUseLowerCamelCase
// (Darwin's names and parameter names, kept for source compatibility.)
// OSFifoQueue: Darwin's intrusive FIFO (<libkern/OSAtomicQueue.h>: OSFifoQueueHead,
// OSAtomicFifoEnqueue, OSAtomicFifoDequeue), elements linked through a pointer word at a
// byte offset inside each element.
//
// Not lock-free. Darwin's implementation is lock-free only with the kernel's help: its code
// runs in the commpage's "preemption-free zone", where the kernel never preempts a thread
// between the steps that update the head and the tail. Linux has nothing like it, and a
// two-pointer update done with CAS alone (Michael-Scott) needs a dummy node the caller's
// elements cannot provide. So each head carries a small futex lock in `opaque3` (Drepper's
// "mutex 3": 0 free, 1 held, 2 held with sleepers; a short spin before sleeping), which
// makes every operation a few instructions under a lock that is held for a handful of stores.
//
// Layout of the head (declared in C, 16-byte aligned as Darwin's):
//     opaque1   the first element (dequeued next), nil when empty
//     opaque2   the last element, nil when empty
//     opaque3   the lock word
// Invariant (under the lock): opaque1 == nil iff opaque2 == nil; the links from opaque1 reach
// opaque2, whose link is nil.
//
// Lock word transitions (Drepper's mutex 3):
//   lock     CAS 0 -> 1 (acquire); else spin 64 rounds retrying it; else exchange 2 (acquire)
//            until it returns 0, futex-waiting on 2 between tries
//   unlock   exchange 0 (release); if it returned 2, futex-wake one
// A thread parks only on the value 2, and the unlock that replaces a 2 wakes one thread, which
// takes the lock with 2 again (it cannot know whether others sleep): no lost wake-up. The
// acquire of each taking exchange or CAS pairs with the release exchange of the previous
// unlock, so the list stores of successive holders are ordered; the list's words are then
// plain loads and stores, touched only under the lock.
//
// Memory ordering for callers: an enqueue is a release and a dequeue an acquire (both hold the
// lock), so whatever was written to an element before its enqueue is visible after the dequeue
// that returns it. Not a full barrier: Darwin's header promises only "barriers as needed".
//
// Signal handlers and fork(): unlike Darwin's, these are not async-signal-safe. A signal
// handler that uses the queue its own thread was inside waits forever for itself, and a queue
// another thread held at fork() stays held in the child. Darwin's commpage code has neither
// problem: it never blocks.

import CInterlock

/// Darwin's `OSFifoQueueHead`: the head of an intrusive first-in, first-out queue for
/// `OSAtomicFifoEnqueue(_:_:_:)` and `OSAtomicFifoDequeue(_:_:)`.
///
/// As on Darwin: a 16-byte aligned struct with `opaque1`, `opaque2: UnsafeMutableRawPointer!`
/// (here the first and last elements) and `opaque3: Int32` (here a lock word), `init()` (an
/// empty queue) and `init(opaque1:opaque2:opaque3:)`. Declared in C
/// (`ilk_os_fifo_queue_head`). Do not copy a head that is in use.
public typealias OSFifoQueueHead = ilk_os_fifo_queue_head

/// An empty ``OSFifoQueueHead``, as the C macro `OS_ATOMIC_FIFO_QUEUE_INIT`. Darwin's Swift
/// does not import that macro (a brace initializer): code that must also build on Darwin writes
/// `OSFifoQueueHead()` instead, which is empty on both.
public var OS_ATOMIC_FIFO_QUEUE_INIT: OSFifoQueueHead { OSFifoQueueHead() }

/// The head's lock word (`opaque3`).
@inlinable @inline(__always)
internal func _fifoLockWord(_ list: UnsafeMutablePointer<OSFifoQueueHead>) -> UnsafeMutablePointer<UInt32> {
    // The Int32 field read as UInt32: signed and unsigned variants of a type may alias.
    (UnsafeMutableRawPointer(list) + MemoryLayout<OSFifoQueueHead>.offset(of: \.opaque3)!)
        .assumingMemoryBound(to: UInt32.self)
}

/// Takes the head's lock: the uncontended CAS inline, the rest out of line.
@inlinable @inline(__always)
internal func _fifoLock(_ word: UnsafeMutablePointer<UInt32>, _ function: StaticString) {
    // Acquire on success: pairs with the release exchange of the previous unlock.
    if _slowPath(ilk_atomic_cas_value_u32(word, 0, 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) != 0) {
        _fifoLockSlow(word, function)
    }
}

/// The lock's spinning and sleeping half (the file comment's transitions).
@usableFromInline @inline(never)
internal func _fifoLockSlow(_ word: UnsafeMutablePointer<UInt32>, _ function: StaticString) {
    // Spin a little: the lock is held for a few stores.
    for _ in 0..<64 {
        ilk_spin_pause()
        // Relaxed: only decides whether to try; the CAS re-reads atomically.
        if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) == 0,
            // Acquire on success: pairs with the release exchange of the previous unlock.
            ilk_atomic_cas_value_u32(word, 0, 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == 0
        {
            return
        }
    }
    // Sleep, marking the word contended so that the unlock wakes someone. Acquire: taking the
    // lock (the exchange returned 0) pairs with the release exchange of the previous unlock.
    while ilk_atomic_exchange_u32(word, 2, ILK_ORDER_ACQUIRE) != 0 {
        let result = ilk_futex_wait(word, 2, -1)
        if result < 0 {
            _fifoTrap("\(function): futex wait on the queue's lock failed with errno \(-result)")
        }
    }
}

/// Releases the head's lock, waking one sleeper if the word says there may be one.
@inlinable @inline(__always)
internal func _fifoUnlock(_ word: UnsafeMutablePointer<UInt32>, _ function: StaticString) {
    // Release: pairs with the acquiring CAS or exchange of the next holder.
    if _slowPath(ilk_atomic_exchange_u32(word, 0, ILK_ORDER_RELEASE) == 2) {
        _fifoWake(word, function)
    }
}

/// Wakes one sleeper after an unlock that found the word contended.
@usableFromInline @inline(never)
internal func _fifoWake(_ word: UnsafeMutablePointer<UInt32>, _ function: StaticString) {
    let result = ilk_futex_wake(word, 1)
    if result < 0 {
        // A refused wake would leave a sleeper parked forever: a lost wake-up.
        _fifoTrap("\(function): futex wake on the queue's lock failed with errno \(-result)")
    }
}

/// Traps with `message`; fatalError keeps its message in optimized builds.
@usableFromInline @inline(never)
internal func _fifoTrap(_ message: String) -> Never {
    fatalError(message)
}

/// The first and last element words, addressed alone: the lock word beside them changes
/// under other threads, so the struct is never read or written whole.
@inlinable @inline(__always)
internal func _fifoEnds(
    _ list: UnsafeMutablePointer<OSFifoQueueHead>
) -> (first: UnsafeMutablePointer<UnsafeMutableRawPointer?>, last: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
    let raw = UnsafeMutableRawPointer(list)
    return (
        (raw + MemoryLayout<OSFifoQueueHead>.offset(of: \.opaque1)!).assumingMemoryBound(
            to: UnsafeMutableRawPointer?.self),
        (raw + MemoryLayout<OSFifoQueueHead>.offset(of: \.opaque2)!).assumingMemoryBound(
            to: UnsafeMutableRawPointer?.self)
    )
}

/// Darwin's `OSAtomicFifoEnqueue`: appends `__new` at the tail of the queue at `__list`.
///
/// `__offset` is the byte offset, inside the element, of its link: a pointer-sized,
/// pointer-aligned word (`UnsafeMutableRawPointer?`) that the queue owns while the element is
/// queued. Typically `MemoryLayout<Element>.offset(of: \.next)!`.
///
/// Not lock-free, unlike Darwin's (which relies on the kernel not preempting its commpage
/// code, something Linux does not offer): a futex lock stored in the head's `opaque3` is held
/// for the few stores of the operation, so it must not be called from a signal handler that
/// may have interrupted an operation on the same queue. Elements come out in the order their
/// enqueues took effect.
///
/// Memory ordering: a release. Everything the calling thread wrote before, the element's fields
/// included, is visible to the thread whose `OSAtomicFifoDequeue(_:_:)` returns this element.
///
/// Where Darwin is undefined: a head or link that is not pointer-aligned traps with a message
/// naming `OSAtomicFifoEnqueue` and the address; a `nil` pointer traps where it is unwrapped.
///
/// - Precondition: `__new` is not already in this or another queue.
@inlinable
public func OSAtomicFifoEnqueue(
    _ __list: UnsafeMutablePointer<OSFifoQueueHead>!,
    _ __new: UnsafeMutableRawPointer!,
    _ __offset: Int
) {
    let list: UnsafeMutablePointer<OSFifoQueueHead> = __list
    _osAtomicCheckAligned(list, UInt(MemoryLayout<UnsafeMutableRawPointer?>.alignment), "OSAtomicFifoEnqueue")
    let element: UnsafeMutableRawPointer = __new
    let link = _queueLink(element, __offset, "OSAtomicFifoEnqueue")
    let word = _fifoLockWord(list)
    let ends = _fifoEnds(list)
    link.pointee = nil
    _fifoLock(word, "OSAtomicFifoEnqueue")
    if let last = ends.last.pointee {
        (last + __offset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee = element
    } else {
        ends.first.pointee = element
    }
    ends.last.pointee = element
    _fifoUnlock(word, "OSAtomicFifoEnqueue")
}

/// Darwin's `OSAtomicFifoDequeue`: removes and returns the element at the head of the queue
/// at `__list` (the one enqueued earliest), or `nil` when the queue is empty.
///
/// `__offset` is the link's offset, the same as for `OSAtomicFifoEnqueue(_:_:_:)`. Not
/// lock-free (see there). Unlike `OSAtomicDequeue(_:_:)`, it never reads an element that is
/// not in the queue, so a dequeued element may be freed at once.
///
/// Memory ordering: an acquire (it sees everything written before the returned element's
/// enqueue).
///
/// Where Darwin is undefined: a head that is not pointer-aligned traps with a message naming
/// `OSAtomicFifoDequeue` and the address.
@inlinable
public func OSAtomicFifoDequeue(
    _ __list: UnsafeMutablePointer<OSFifoQueueHead>!,
    _ __offset: Int
) -> UnsafeMutableRawPointer! {
    let list: UnsafeMutablePointer<OSFifoQueueHead> = __list
    _osAtomicCheckAligned(list, UInt(MemoryLayout<UnsafeMutableRawPointer?>.alignment), "OSAtomicFifoDequeue")
    let word = _fifoLockWord(list)
    let ends = _fifoEnds(list)
    _fifoLock(word, "OSAtomicFifoDequeue")
    guard let first = ends.first.pointee else {
        _fifoUnlock(word, "OSAtomicFifoDequeue")
        return nil
    }
    // Every queued link was checked for alignment by its enqueue.
    let next = (first + __offset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee
    ends.first.pointee = next
    if next == nil { ends.last.pointee = nil }
    _fifoUnlock(word, "OSAtomicFifoDequeue")
    return first
}
