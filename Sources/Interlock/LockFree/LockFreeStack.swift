// LockFreeStack: a lock-free LIFO, the heir of OSAtomicEnqueue/OSAtomicDequeue.
//
// Algorithm: R. K. Treiber, "Systems Programming: Coping with Parallelism", IBM Almaden
// RJ 5118, 1986 — a singly linked list whose head is swung by compare-and-swap — with the head
// tagged by a generation count against ABA (IBM System/370 Principles of Operation, the
// free-pool example of Compare Double and Swap), type-stable nodes recycled at once, and memory
// reclamation by userspace RCU for the nodes that leave the pool (M. Desnoyers et al.,
// "User-Level Implementations of Read-Copy Update", IEEE TPDS 2012; liburcu's urcu-bp flavor).
//
// Layout. The head is a pair of words alone on a 128-byte line (`_PaddedWords.first` and the
// word after it): the top node's address and a generation count, changed together by the
// double-width compare-and-swap `ilk_dwcas` (CShims/include/ilk_osqueue.h). A node is one raw
// heap block:
//
//     offset 0               next: the node below (a raw pointer word, nil at the bottom)
//     offset elementOffset   the element (MemoryLayout<Element>; elementOffset = max(8, align))
//
// Node life cycle: ALLOCATED (by push, element initialized, private) -> LINKED (published by
// push's CAS on head) -> UNLINKED (the pop whose CAS removed it owns it: it moves the element
// out) -> RETIRED (handed to ilk_node_retire: this thread's node cache, CShims/
// include/ilk_node_pool.h) -> ALLOCATED again at once by any push of the class, this stack's or
// another's; or, when the pool's caps are reached, FREED after a grace period. Over-aligned or
// large elements (`_pooled` false) bypass the pool: their nodes are freed after a grace period
// (ilk_rcu_retire) and never reused.
//
// Invariants.
//   I1. head.pointer is nil or points to a LINKED node; the LINKED nodes form the list from
//       head, each holding an initialized element.
//   I2. A node's `next` is written only while the node is ALLOCATED (before the CAS that links
//       it) and does not change while it is LINKED.
//   I3. Every pop increments head.generation; a push keeps it. So head's value (pointer,
//       generation) never repeats after a pop.
//   I4. Node memory is read only inside a read-side section or by its owner, and is freed only
//       after a grace period that began after it was last UNLINKED (the pool's type stability;
//       ilk_rcu_retire for unpooled nodes).
// ABA. A pop reads head == (A, g) and A.next == B, then CAS(head, (A, g) -> (B, g + 1)). In
// between, A may have been popped, recycled and pushed again with another next (the pool reuses
// nodes at once). But that pop made the generation g + 1 or more (I3), so the CAS fails; a CAS
// that succeeds proves head held (A, g) throughout (every change moves the pointer off A only
// by a pop, and back only with a new generation), so A stayed LINKED with next B (I2). The read
// of A.next itself may race with A's recycling: it reads node memory (I4: not freed while the
// pop's read-side section lasts), as a relaxed atomic, and the value is only used by a CAS that
// then fails. Push needs no section: it never dereferences a shared node, and a
// CAS(head, (A, g) -> (N, g)) with N.next == A is correct whatever A's history. The spin model
// Verification/Models/stack.pml checks this with any recycling order (every interleaving of
// fixed scripts, the classic ABA schedule among them), and catches a pop that leaves the
// generation unchanged.
//
// Why the node is reusable at once. Waiting out a grace period before reuse made push malloc
// 15-23 % of its nodes beside a neighbour process (Benchmarks/README.md, "The stack beside the
// neighbour"); a generation-counted double-width CAS on pop makes immediate reuse safe, as in
// Concurrency Kit's ck_stack.
//
// Why a double-width CAS, not a tag in the pointer's spare bits (Boost.Lockfree's 16-bit tag):
// such a tag repeats after 65,536 pops, so a pop preempted across them could swing head to a
// node that has left the stack; only a generation that does not repeat (I3) keeps the proof.
// Its price, the deciding figure: beside a neighbour process this stack reads 1.00-1.15 of
// Boost's time, an 8-byte tagged build 0.77-1.05 (Benchmarks/README.md, "The container rows
// again").
//
// Contention. A push or pop whose CAS lost backs off exponentially (1, 2, 4, ... up to 32
// pauses, `_LockFreeBackoff`) before retrying, so the line holding head stays with one core
// for several operations instead of moving on every attempt: four threads alternating push
// and pop on two cores took 43 ns per element without it and 20 ns with it (a standalone loop;
// Concurrency Kit's ck_stack 32 ns in the same loop). A pop that finds head nil returns
// without entering a read-side section: nothing is dereferenced, and consumers polling an
// empty stack then cost one shared read of head (measured: 2 producers and 2 consumers, 67 ->
// 30-36 ns per element in three runs of QueueBenchmarks).
//
// Memory orderings. `ilk_dwcas` is sequentially consistent (`lock cmpxchg16b`, a full barrier on
// x86-64; a seq_cst 16-byte compare-and-swap on AArch64; a stripe lock's acquire and release in
// the fallback), stronger than the release a push needs to publish the node's next and element
// and the acquire a pop needs to see them. Every change of head is a read-modify-write, so a pop
// that reads a value written by a later pop still synchronizes with the push that linked its
// node (release sequence).
//   - pop's loads of head's two words, inside the section, are `acquire`, generation first: a
//     pair torn by a change between the loads holds an old generation, so its CAS fails (I3);
//     acquire also orders the load of the top node's next after the push that wrote it.
//   - push's first loads are relaxed: only a guess for the CAS, which reports the pair found.
//   - `next` is accessed with relaxed atomics: it is written before publication (I2) and read
//     after an acquire of the pointer to the node; atomics because a stale pop may read it
//     while a recycling push writes it (the pop's CAS then fails).
//   - isEmpty is an acquire load of head's pointer: a snapshot.
//   - pop's first look at head, before the read-side section, is relaxed: when it reads nil,
//     nothing is read through it; when not, the acquire loads inside the section are the ones
//     that pair with push.
// Linearization points: push at its successful CAS; a pop that returns an element at its
// successful CAS; a pop that returns nil at its load of a nil head (the first look, or the
// one inside the section).
//
// Progress: lock-free where ilk_dwcas is (x86-64 with CMPXCHG16B, AArch64): a CAS fails only
// because another push or pop succeeded. Retirement never waits. Under ThreadSanitizer, and on
// x86-64 CPUs without CMPXCHG16B, ilk_dwcas takes one of 64 striped spin locks (blocking, still
// linearizable; the RCU fork handlers hold the stripes across fork()).

import CInterlock

/// A lock-free last-in, first-out stack: the heir of `OSAtomicEnqueue` and `OSAtomicDequeue`.
///
/// Any number of threads may push and pop at once; no operation waits for another thread
/// (lock-free), and every operation takes effect atomically at one instant between its call
/// and its return (linearizable). Elements are neither lost nor duplicated.
///
/// A popped node is recycled at once for the next push (this stack's or another's), and a
/// generation count on the top of the stack makes that safe (no ABA). Node memory leaves the
/// recycling pool, beyond its bounds (two batches of 1,022 nodes per thread and size, 8 MiB per
/// size globally), only through userspace RCU (liburcu): it is freed after every thread that
/// might still read it has moved on, so there is no use-after-free. Threads need no
/// registration: any thread may call in.
///
/// Elements still in the stack are released when the stack is deinitialized (iteratively: a
/// stack of millions of elements deinitializes without deep recursion).
///
/// - Note: ``LockFreeQueue`` is the first-in, first-out counterpart.
public final class LockFreeStack<Element> {
    /// The head, alone on its cache line: the top node's address (`_words.first`) and the
    /// generation count in the word after it (`_generation`).
    @usableFromInline internal let _words: _PaddedWords

    /// Creates an empty stack.
    @inlinable
    public init() {
        _words = _PaddedWords()
    }

    deinit {
        // No other thread can reach the stack any more: walk without a read-side section. A
        // pooled node goes back to the pool, not to free(): a stale pop of another stack may
        // still read it (type stability, I4); an unpooled one only this stack ever reached.
        var node = _words.first.pointee
        while let current = node {
            node = Self._next(current).pointee
            Self._element(current).deinitialize(count: 1)
            if Self._pooled { ilk_node_retire(current, Self._nodeSize) } else { ilk_node_free(current) }
        }
        _words.deallocate()
    }

    // MARK: Layout

    /// Offset of the element in a node: after the `next` word, aligned for `Element`.
    @inlinable @inline(__always)
    internal static var _elementOffset: Int {
        _roundUp(MemoryLayout<UnsafeMutableRawPointer?>.size, toMultipleOf: MemoryLayout<Element>.alignment)
    }

    /// Bytes in a node.
    @inlinable @inline(__always)
    internal static var _nodeSize: Int {
        _elementOffset + MemoryLayout<Element>.size
    }

    /// Alignment of a node: the element's, at least a pointer's.
    @inlinable @inline(__always)
    internal static var _nodeAlignment: Int {
        Swift.max(MemoryLayout<UnsafeMutableRawPointer?>.alignment, MemoryLayout<Element>.alignment)
    }

    /// Whether nodes go through the recycling pool (CShims/include/ilk_node_pool.h), which
    /// hands out 16-byte aligned nodes; over-aligned elements use aligned blocks instead.
    @inlinable @inline(__always)
    internal static var _pooled: Bool { _nodeAlignment <= 16 }

    @inlinable @inline(__always)
    internal static func _allocateNode() -> UnsafeMutableRawPointer {
        _pooled ? ilk_node_alloc(_nodeSize)! : ilk_block_alloc(_nodeSize, _nodeAlignment)!
    }

    /// Hands an unlinked node back: to this thread's node cache, reusable at once (pool), or to
    /// RCU, freed after a grace period (aligned block).
    @inlinable @inline(__always)
    internal static func _retireNode(_ node: UnsafeMutableRawPointer) {
        _inject(.rcuRetire)
        if _pooled { ilk_node_retire(node, _nodeSize) } else { ilk_rcu_retire(node, _nodeSize) }
    }

    /// The head's generation count, the word after the top node's address (I3).
    @inlinable @inline(__always)
    internal var _generation: UnsafeMutablePointer<Int> {
        (_words.base + MemoryLayout<Int>.size).assumingMemoryBound(to: Int.self)
    }

    @inlinable @inline(__always)
    internal static func _next(_ node: UnsafeMutableRawPointer) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        node.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    @inlinable @inline(__always)
    internal static func _element(_ node: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Element> {
        (node + _elementOffset).assumingMemoryBound(to: Element.self)
    }

    // MARK: Operations

    /// Pushes `element` on top of the stack.
    ///
    /// Lock-free; takes one node from this thread's cache of recycled nodes (or the heap).
    @inlinable
    public func push(_ element: Element) {
        let node = Self._allocateNode()
        // SAFETY: the node is ours (fresh or recycled), large and aligned enough for a next
        // word and an Element; binding the memory is free at run time.
        node.bindMemory(to: UnsafeMutableRawPointer?.self, capacity: 1)
        (node + Self._elementOffset).initializeMemory(as: Element.self, repeating: element, count: 1)
        let head = _words.base
        // Relaxed: only a guess for the CAS, which reports the pair it found.
        var generation = UInt(bitPattern: ilk_atomic_load_iptr(_generation, ILK_ORDER_RELAXED))
        var top = UInt(bitPattern: ilk_atomic_load_ptr(_words.first, ILK_ORDER_RELAXED))
        var backoff = _LockFreeBackoff()
        while true {
            // Relaxed: the node is private until the CAS below publishes it (I2); atomic because
            // a stale pop may read a recycled node's next (ABA in the file comment).
            ilk_atomic_store_ptr(Self._next(node), UnsafeMutableRawPointer(bitPattern: top), ILK_ORDER_RELAXED)
            // Seq_cst (ilk_dwcas): publishes next and the element to pop's acquire. A push keeps
            // the generation (I3).
            if ilk_dwcas(head, &top, &generation, UInt(bitPattern: node), generation) {
                return
            }
            backoff.pause()
        }
    }

    /// Removes and returns the element on top of the stack, or `nil` when the stack is empty.
    ///
    /// Lock-free. The popped node goes back to this thread's node cache, for the next push.
    @inlinable
    public func pop() -> Element? {
        // An empty stack needs no read-side section: nothing is dereferenced. Relaxed: a nil
        // head publishes nothing (the linearization point of a pop that returns nil).
        if ilk_atomic_load_ptr(_words.first, ILK_ORDER_RELAXED) == nil { return nil }
        let head = _words.base
        ilk_rcu_read_lock()
        // Acquire, generation first: a torn pair holds an old generation and its CAS fails
        // (I3); the pointer's acquire pairs with the CAS that linked the node (its next).
        var generation = UInt(bitPattern: ilk_atomic_load_iptr(_generation, ILK_ORDER_ACQUIRE))
        var top = UInt(bitPattern: ilk_atomic_load_ptr(_words.first, ILK_ORDER_ACQUIRE))
        var backoff = _LockFreeBackoff()
        while top != 0 {
            // SAFETY: the node was reachable from head inside this read-side section, so its
            // memory is not freed before ilk_rcu_read_unlock (I4); it may have been recycled
            // meanwhile, and then the CAS below fails (ABA in the file comment).
            let node = UnsafeMutableRawPointer(bitPattern: top)!
            let next = UInt(bitPattern: ilk_atomic_load_ptr(Self._next(node), ILK_ORDER_RELAXED))
            _inject(.stackPopRead)
            if ilk_dwcas(head, &top, &generation, next, generation &+ 1) {
                break
            }
            backoff.pause()
        }
        ilk_rcu_read_unlock()
        guard let node = UnsafeMutableRawPointer(bitPattern: top) else { return nil }
        // SAFETY: our CAS unlinked node, so only this thread may touch its element; its memory
        // stays valid until we retire it.
        let element = Self._element(node).move()
        Self._retireNode(node)
        return element
    }

    /// Whether the stack was empty at the instant of the call: a snapshot, which other threads
    /// may change before the caller looks at it.
    @inlinable
    public var isEmpty: Bool {
        // Acquire: orders this snapshot after the pushes and pops it observes.
        ilk_atomic_load_ptr(_words.first, ILK_ORDER_ACQUIRE) == nil
    }
}

extension LockFreeStack: @unchecked Sendable where Element: Sendable {}
