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
// of the pointer to its element. What a caller may rely on is release for an enqueue and
// acquire for a dequeue that returns an element: everything written to an element before its
// enqueue is visible after the dequeue that returns it. A dequeue of an empty queue is two
// acquire loads and orders nothing else. That is what Darwin's arm64 code gives too (its header
// promises only "barriers as needed"); x86-64's `lock cmpxchg16b` happens to be a full barrier.
// Progress: lock-free where ilk_dwcas is (x86-64 with CMPXCHG16B, AArch64; see
// OSAtomicEnqueue); a CAS fails only because another operation succeeded.
//
// Signal handlers and fork(): on the lock-free targets an operation interrupted at any point
// leaves the queue consistent, so a signal handler may use the queue its thread was using, and
// a child of fork() may go on using it. On the striped-lock fallback (ThreadSanitizer builds,
// x86-64 CPUs without CMPXCHG16B) a handler that enters while its thread holds the stripe spins
// forever; fork() is safe there too, since the first striped operation installs the fork
// handlers that hold every stripe across it (CShims/ilk_dwcas.c).

import CInterlock

/// Darwin's `OSQueueHead`: the head of an intrusive last-in, first-out queue for
/// `OSAtomicEnqueue(_:_:_:)` and `OSAtomicDequeue(_:_:)`.
///
/// As on Darwin: a 16-byte, 16-byte aligned struct with `opaque1: UnsafeMutableRawPointer!`
/// (the first element) and `opaque2: Int` (a generation count), `init()` (an empty queue) and
/// `init(opaque1:opaque2:)`. It is declared in C (`ilk_os_queue_head`) for the alignment the
/// double-width compare-and-swap needs: a head you allocate (`UnsafeMutablePointer<OSQueueHead>
/// .allocate(capacity:)`, a stored property of a class, a global) gets it. Do not copy a head
/// that is in use: the queue is the memory the pointer passed to the functions designates.
public typealias OSQueueHead = ilk_os_queue_head

/// An empty ``OSQueueHead``, as the C macro `OS_ATOMIC_QUEUE_INIT`. Darwin's Swift does not
/// import that macro (a brace initializer): code that must also build on Darwin writes
/// `OSQueueHead()` instead, which is empty on both.
public var OS_ATOMIC_QUEUE_INIT: OSQueueHead { OSQueueHead() }

/// The head's two words: the first element and the generation.
@inlinable @inline(__always)
internal func _queueWords(
    _ list: UnsafeMutablePointer<OSQueueHead>
) -> (head: UnsafeMutablePointer<UnsafeMutableRawPointer?>, generation: UnsafeMutablePointer<Int>) {
    let raw = UnsafeMutableRawPointer(list)
    return (
        raw.assumingMemoryBound(to: UnsafeMutableRawPointer?.self),
        (raw + MemoryLayout<UnsafeMutableRawPointer?>.stride).assumingMemoryBound(to: Int.self)
    )
}

/// The link word of `element`: `offset` bytes into it, pointer-aligned (trapping otherwise,
/// naming `function`).
@inlinable @inline(__always)
internal func _queueLink(
    _ element: UnsafeMutableRawPointer, _ offset: Int, _ function: StaticString
) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
    let link = element + offset
    _osAtomicCheckAligned(link, UInt(MemoryLayout<UnsafeMutableRawPointer?>.alignment), function)
    return link.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
}

/// Darwin's `OSAtomicEnqueue`: pushes `__new` on the queue at `__list` (last in, first out).
///
/// `__offset` is the byte offset, inside the element, of its link: a pointer-sized,
/// pointer-aligned word (`UnsafeMutableRawPointer?`, as Darwin's `void *`) that the queue owns
/// while the element is queued. Typically `MemoryLayout<Element>.offset(of: \.next)!`.
///
/// Lock-free and ABA-safe on x86-64 (`lock cmpxchg16b`; Darwin needs that instruction too) and
/// on AArch64 (a 16-byte compare-and-swap: LDAXP/STLXP, or CASPAL with LSE). On other targets,
/// on an x86-64 CPU without CMPXCHG16B (checked once, with CPUID), and on x86-64 when
/// ThreadSanitizer's runtime is linked in (it cannot see the instruction), the double-width
/// compare-and-swap takes one of 64 striped spin locks: correct, not lock-free, and then not
/// safe to call from a signal handler that interrupted an operation on the same stripe.
///
/// Memory ordering: a release. Everything the calling thread wrote before, the element's fields
/// included, is visible to the thread whose `OSAtomicDequeue(_:_:)` returns this element.
///
/// Where Darwin is undefined: a head that is not 16-byte aligned, or a link that is not
/// pointer-aligned, traps with a message naming `OSAtomicEnqueue` and the address (Darwin's
/// `cmpxchg16b` faults); a `nil` pointer traps where it is unwrapped.
///
/// - Precondition: `__new` is not already in this or another queue.
@inlinable
public func OSAtomicEnqueue(
    _ __list: UnsafeMutablePointer<OSQueueHead>!,
    _ __new: UnsafeMutableRawPointer!,
    _ __offset: Int
) {
    let list: UnsafeMutablePointer<OSQueueHead> = __list
    _osAtomicCheckAligned(list, 16, "OSAtomicEnqueue")
    let words = _queueWords(list)
    let link = _queueLink(__new, __offset, "OSAtomicEnqueue")
    // Relaxed: only guesses for the CAS, which hands back the real pair when they are stale.
    var generation = UInt(bitPattern: ilk_atomic_load_iptr(words.generation, ILK_ORDER_RELAXED))
    var top = UInt(bitPattern: ilk_atomic_load_ptr(words.head, ILK_ORDER_RELAXED))
    let element = UInt(bitPattern: __new)
    while true {
        // Relaxed: the element is private until the CAS below (sequentially consistent, so a
        // release) publishes it.
        ilk_atomic_store_ptr(link, UnsafeMutableRawPointer(bitPattern: top), ILK_ORDER_RELAXED)
        let nextGeneration = generation &+ 1
        if ilk_dwcas(UnsafeMutableRawPointer(list), &top, &generation, element, nextGeneration) {
            return
        }
        ilk_spin_pause()
    }
}

/// Darwin's `OSAtomicDequeue`: pops the element most recently enqueued on the queue at
/// `__list`, or returns `nil` when the queue is empty.
///
/// `__offset` is the link's offset, the same as for `OSAtomicEnqueue(_:_:_:)`. Lock-free on
/// the same targets.
///
/// Memory ordering: an acquire when it returns an element (it sees everything written before
/// that element's enqueue); a dequeue that finds the queue empty orders nothing else.
///
/// Where Darwin is undefined: a head that is not 16-byte aligned traps with a message naming
/// `OSAtomicDequeue` and the address, and so does a link that is not pointer-aligned.
///
/// - Important: As on Darwin, the memory of every element that was ever enqueued must stay
///   allocated and readable (not freed, not unmapped) for as long as any thread may still be
///   inside `OSAtomicDequeue` on that queue: a dequeuer reads the link of the element it saw
///   at the head, and another thread may have dequeued that element meanwhile. The value it
///   reads then is discarded (the generation makes its compare-and-swap fail), but the read
///   itself must not fault. Recycle elements through a pool, or free them only once the
///   queue is quiescent. ThreadSanitizer may report that read as a race with the new owner's
///   writes to the element.
@inlinable
public func OSAtomicDequeue(
    _ __list: UnsafeMutablePointer<OSQueueHead>!,
    _ __offset: Int
) -> UnsafeMutableRawPointer! {
    let list: UnsafeMutablePointer<OSQueueHead> = __list
    _osAtomicCheckAligned(list, 16, "OSAtomicDequeue")
    let words = _queueWords(list)
    // Acquire, the generation first, then the pointer: a torn pair only makes the CAS fail; the
    // pointer's acquire pairs with the enqueue's CAS, so the element's link is visible.
    var generation = UInt(bitPattern: ilk_atomic_load_iptr(words.generation, ILK_ORDER_ACQUIRE))
    var top = UInt(bitPattern: ilk_atomic_load_ptr(words.head, ILK_ORDER_ACQUIRE))
    while let element = UnsafeMutableRawPointer(bitPattern: top) {
        // SAFETY: the caller keeps every element's memory readable (see above); a stale value
        // read from an element dequeued meanwhile is discarded by the CAS.
        // Relaxed: ordered after the acquire of the pointer that led here (or the failed CAS's
        // sequentially consistent read); the CAS validates it.
        let next = ilk_atomic_load_ptr(_queueLink(element, __offset, "OSAtomicDequeue"), ILK_ORDER_RELAXED)
        let nextGeneration = generation &+ 1
        if ilk_dwcas(UnsafeMutableRawPointer(list), &top, &generation, UInt(bitPattern: next), nextGeneration) {
            return element
        }
        ilk_spin_pause()
    }
    return nil
}
