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

import CInterlock

/// Darwin's `OSFifoQueueHead`: the head of an intrusive first-in, first-out queue for
/// `OSAtomicFifoEnqueue(_:_:_:)` and `OSAtomicFifoDequeue(_:_:)`.
///
/// As on Darwin: a 16-byte aligned struct with `opaque1`, `opaque2: UnsafeMutableRawPointer?`
/// (here the first and last elements) and `opaque3: Int32` (here a lock word), `init()` (an
/// empty queue) and `init(opaque1:opaque2:opaque3:)`. Declared in C
/// (`ilk_os_fifo_queue_head`). Do not copy a head that is in use.
public typealias OSFifoQueueHead = ilk_os_fifo_queue_head

/// Darwin's `OS_ATOMIC_FIFO_QUEUE_INIT`: an empty ``OSFifoQueueHead``.
public var OS_ATOMIC_FIFO_QUEUE_INIT: OSFifoQueueHead { OSFifoQueueHead() }

@inline(__always)
private func _fifoLockWord(_ list: UnsafeMutablePointer<OSFifoQueueHead>) -> UnsafeMutablePointer<UInt32> {
    // The Int32 field read as UInt32: signed and unsigned variants of a type may alias.
    (UnsafeMutableRawPointer(list) + MemoryLayout<OSFifoQueueHead>.offset(of: \.opaque3)!)
        .assumingMemoryBound(to: UInt32.self)
}

private func _fifoLock(_ word: UnsafeMutablePointer<UInt32>) {
    var expected: UInt32 = 0
    if ilk_atomic_cas_strong_u32(word, &expected, 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) { return }
    // Spin a little: the lock is held for a few stores.
    for _ in 0..<64 {
        ilk_spin_pause()
        expected = 0
        if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) == 0,
            ilk_atomic_cas_strong_u32(word, &expected, 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
        {
            return
        }
    }
    // Sleep, marking the word contended so that the unlock wakes someone.
    while ilk_atomic_exchange_u32(word, 2, ILK_ORDER_ACQUIRE) != 0 {
        let result = ilk_futex_wait(word, 2, -1)
        precondition(result >= 0, "OSAtomicFifoEnqueue/Dequeue: futex wait failed, errno \(-result)")
    }
}

private func _fifoUnlock(_ word: UnsafeMutablePointer<UInt32>) {
    if ilk_atomic_exchange_u32(word, 0, ILK_ORDER_RELEASE) == 2 {
        _ = ilk_futex_wake(word, 1)
    }
}

/// The first and last element words, addressed alone: the lock word beside them changes
/// under other threads, so the struct is never read or written whole.
@inline(__always)
private func _fifoEnds(
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

@inline(__always)
private func _fifoLink(_ element: UnsafeMutableRawPointer, _ offset: Int) -> UnsafeMutablePointer<
    UnsafeMutableRawPointer?
> {
    (element + offset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
}

/// Darwin's `OSAtomicFifoEnqueue`: appends `__new` at the tail of the queue at `__list`.
///
/// `__offset` is the byte offset, inside the element, of its link: a pointer-sized,
/// pointer-aligned word (`UnsafeMutableRawPointer?`) that the queue owns while the element is
/// queued. Typically `MemoryLayout<Element>.offset(of: \.next)!`.
///
/// Not lock-free, unlike Darwin's (which relies on the kernel not preempting its commpage
/// code, something Linux does not offer): a futex lock stored in the head's `opaque3` is held
/// for the few stores of the operation. It is a full barrier, and elements come out in the
/// order their enqueues took effect.
///
/// - Precondition: `__new` is not already in this or another queue.
public func OSAtomicFifoEnqueue(
    _ __list: UnsafeMutablePointer<OSFifoQueueHead>,
    _ __new: UnsafeMutableRawPointer,
    _ __offset: Int
) {
    let word = _fifoLockWord(__list)
    _fifoLink(__new, __offset).pointee = nil
    let ends = _fifoEnds(__list)
    _fifoLock(word)
    if let last = ends.last.pointee {
        _fifoLink(last, __offset).pointee = __new
    } else {
        ends.first.pointee = __new
    }
    ends.last.pointee = __new
    _fifoUnlock(word)
}

/// Darwin's `OSAtomicFifoDequeue`: removes and returns the element at the head of the queue
/// at `__list` (the one enqueued earliest), or `nil` when the queue is empty.
///
/// `__offset` is the link's offset, the same as for `OSAtomicFifoEnqueue(_:_:_:)`. Not
/// lock-free (see there). Unlike `OSAtomicDequeue(_:_:)`, it never reads an element that is
/// not in the queue, so a dequeued element may be freed at once.
public func OSAtomicFifoDequeue(
    _ __list: UnsafeMutablePointer<OSFifoQueueHead>,
    _ __offset: Int
) -> UnsafeMutableRawPointer? {
    let word = _fifoLockWord(__list)
    let ends = _fifoEnds(__list)
    _fifoLock(word)
    guard let first = ends.first.pointee else {
        _fifoUnlock(word)
        return nil
    }
    let next = _fifoLink(first, __offset).pointee
    ends.first.pointee = next
    if next == nil { ends.last.pointee = nil }
    _fifoUnlock(word)
    return first
}
