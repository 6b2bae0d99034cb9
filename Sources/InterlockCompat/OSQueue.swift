// swift-format-ignore-file: AlwaysUseLowerCamelCase
// (Darwin's names and parameter names, kept for source compatibility.)
// OSQueue: Darwin's intrusive lock-free LIFO (<libkern/OSAtomicQueue.h>: OSQueueHead,
// OSAtomicEnqueue, OSAtomicDequeue), with the caller's elements linked through a pointer word
// at a byte offset inside each element.
//
// Algorithm: Treiber's stack (R. K. Treiber, IBM Almaden RJ 5118, 1986) with a generation
// count beside the head pointer, both swung together by one double-width compare-and-swap
// (CShims/include/ilk_osqueue.h), as Darwin does (cmpxchg16b on x86-64).
//
// Layout of the head (16 bytes, 16-byte aligned, declared in C for that alignment):
//     opaque1   the first element, nil when empty
//     opaque2   the generation: incremented by every successful enqueue and dequeue
//
// ABA. A dequeue reads (A, g), then A's link B, then CAS((A, g) -> (B, g+1)). Without the
// generation the CAS would succeed after A was dequeued, B dequeued and A enqueued again,
// installing the stale B. Every change increments the generation, so the CAS succeeds only if
// no operation at all took effect since the dequeue read g; then A was the head throughout and
// its link (written before A was published, never changed while A is queued) is B.
// Torn reads. The dequeue reads the generation first, then the pointer (two acquire loads): a
// pair from two different moments has a generation older than the pointer, and the CAS then
// fails (it compares both words with one atomic read) and hands back the current pair.
// Orderings: the double-width CAS is sequentially consistent; the head loads are acquire
// (they pair with the enqueue's CAS, which publishes the link and the element); the link is
// read and written with relaxed atomics: written before publication, read after an acquire
// of the pointer to its element.
// Progress: lock-free where ilk_dwcas is (x86-64 and AArch64, see OSAtomicEnqueue); a CAS
// fails only because another operation succeeded.

import CInterlock

/// Darwin's `OSQueueHead`: the head of an intrusive last-in, first-out queue for
/// `OSAtomicEnqueue(_:_:_:)` and `OSAtomicDequeue(_:_:)`.
///
/// As on Darwin: a 16-byte, 16-byte aligned struct with `opaque1: UnsafeMutableRawPointer?`
/// (the first element) and `opaque2: Int` (a generation count), `init()` (an empty queue) and
/// `init(opaque1:opaque2:)`. It is declared in C (`ilk_os_queue_head`) for the alignment the
/// double-width compare-and-swap needs. Do not copy a head that is in use: the queue is the
/// memory the pointer passed to the functions designates.
public typealias OSQueueHead = ilk_os_queue_head

/// Darwin's `OS_ATOMIC_QUEUE_INIT`: an empty ``OSQueueHead``.
public var OS_ATOMIC_QUEUE_INIT: OSQueueHead { OSQueueHead() }

@inline(__always)
private func _queueWords(
    _ list: UnsafeMutablePointer<OSQueueHead>
) -> (head: UnsafeMutablePointer<UnsafeMutableRawPointer?>, generation: UnsafeMutablePointer<Int>) {
    let raw = UnsafeMutableRawPointer(list)
    return (
        raw.assumingMemoryBound(to: UnsafeMutableRawPointer?.self),
        (raw + MemoryLayout<UnsafeMutableRawPointer?>.stride).assumingMemoryBound(to: Int.self)
    )
}

@inline(__always)
private func _link(_ element: UnsafeMutableRawPointer, _ offset: Int) -> UnsafeMutablePointer<UnsafeMutableRawPointer?>
{
    (element + offset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
}

/// Darwin's `OSAtomicEnqueue`: pushes `__new` on the queue at `__list` (last in, first out).
///
/// `__offset` is the byte offset, inside the element, of its link: a pointer-sized,
/// pointer-aligned word (`UnsafeMutableRawPointer?`, as Darwin's `void *`) that the queue owns
/// while the element is queued. Typically `MemoryLayout<Element>.offset(of: \.next)!`.
///
/// Lock-free and ABA-safe on x86-64 (`lock cmpxchg16b`; Darwin needs that instruction too) and
/// on AArch64 (a 16-byte compare-and-swap: LDAXP/STLXP, or CASPAL with LSE). On other targets,
/// and on x86-64 when ThreadSanitizer's runtime is linked in (it cannot see the instruction),
/// the double-width compare-and-swap takes one of 64 striped spin locks: correct, not
/// lock-free. A full barrier, like Darwin's.
///
/// - Precondition: `__new` is not already in this or another queue.
public func OSAtomicEnqueue(
    _ __list: UnsafeMutablePointer<OSQueueHead>,
    _ __new: UnsafeMutableRawPointer,
    _ __offset: Int
) {
    let words = _queueWords(__list)
    let link = _link(__new, __offset)
    // Relaxed: only guesses for the CAS, which hands back the real pair when they are stale.
    var generation = UInt(bitPattern: ilk_atomic_load_iptr(words.generation, ILK_ORDER_RELAXED))
    var top = UInt(bitPattern: ilk_atomic_load_ptr(words.head, ILK_ORDER_RELAXED))
    let element = UInt(bitPattern: __new)
    while true {
        // Relaxed: the element is private until the CAS below publishes it.
        ilk_atomic_store_ptr(link, UnsafeMutableRawPointer(bitPattern: top), ILK_ORDER_RELAXED)
        let nextGeneration = generation &+ 1
        if ilk_dwcas(UnsafeMutableRawPointer(__list), &top, &generation, element, nextGeneration) {
            return
        }
        ilk_spin_pause()
    }
}

/// Darwin's `OSAtomicDequeue`: pops the element most recently enqueued on the queue at
/// `__list`, or returns `nil` when the queue is empty.
///
/// `__offset` is the link's offset, the same as for `OSAtomicEnqueue(_:_:_:)`. Lock-free on
/// the same targets; a full barrier.
///
/// - Important: As on Darwin, the memory of every element that was ever enqueued must stay
///   allocated and readable (not freed, not unmapped) for as long as any thread may still be
///   inside `OSAtomicDequeue` on that queue: a dequeuer reads the link of the element it saw
///   at the head, and another thread may have dequeued that element meanwhile. The value it
///   reads then is discarded (the generation makes its compare-and-swap fail), but the read
///   itself must not fault. Recycle elements through a pool, or free them only once the
///   queue is quiescent. ThreadSanitizer may report that read as a race with the new owner's
///   writes to the element.
public func OSAtomicDequeue(
    _ __list: UnsafeMutablePointer<OSQueueHead>,
    _ __offset: Int
) -> UnsafeMutableRawPointer? {
    let words = _queueWords(__list)
    // The generation first, then the pointer: a torn pair only makes the CAS fail.
    var generation = UInt(bitPattern: ilk_atomic_load_iptr(words.generation, ILK_ORDER_ACQUIRE))
    var top = UInt(bitPattern: ilk_atomic_load_ptr(words.head, ILK_ORDER_ACQUIRE))
    while let element = UnsafeMutableRawPointer(bitPattern: top) {
        // SAFETY: the caller keeps every element's memory readable (see above); a stale value
        // read from an element dequeued meanwhile is discarded by the CAS.
        let next = ilk_atomic_load_ptr(_link(element, __offset), ILK_ORDER_RELAXED)
        let nextGeneration = generation &+ 1
        if ilk_dwcas(UnsafeMutableRawPointer(__list), &top, &generation, UInt(bitPattern: next), nextGeneration) {
            return element
        }
        ilk_spin_pause()
    }
    return nil
}
