// LockFreeStack: a lock-free LIFO, the heir of OSAtomicEnqueue/OSAtomicDequeue.
//
// Algorithm: R. K. Treiber, "Systems Programming: Coping with Parallelism", IBM Almaden
// RJ 5118, 1986 — a singly linked list whose head is swung by compare-and-swap — with memory
// reclamation by userspace RCU (M. Desnoyers et al., "User-Level Implementations of
// Read-Copy Update", IEEE TPDS 2012; liburcu's urcu-bp flavor), which also removes the ABA
// problem of the classic algorithm.
//
// Layout. The head pointer sits alone on a 128-byte line (`_PaddedWords.first`). A node is one
// raw heap block:
//
//     offset 0               next: the node below (a raw pointer word, nil at the bottom)
//     offset elementOffset   the element (MemoryLayout<Element>; elementOffset = max(8, align))
//
// Node life cycle: ALLOCATED (by push, element initialized, private) -> LINKED (published by
// push's CAS on head) -> UNLINKED (the pop whose CAS removed it owns it: it moves the element
// out) -> RETIRED (handed to ilk_node_retire) -> REUSABLE (after a grace period, in a batch on
// the node pool's ready list, CShims/include/ilk_node_pool.h) -> ALLOCATED again by any
// thread's push; or FREED when the pool is full. A node allocator per element costs more than
// the whole push and pop (malloc plus a free in liburcu's worker thread): the pool makes
// allocation and retirement a few array operations per node and one call_rcu per 1022 nodes;
// a thread reuses the nodes it retired itself first, so they stay in its core's cache.
//
// Invariants.
//   I1. head is nil or points to a LINKED node; the LINKED nodes form the list from head, each
//       holding an initialized element.
//   I2. `next` is written only while the node is ALLOCATED (before the CAS that links it) and
//       never changes afterwards.
//   I3. A node is reused or freed only after a grace period that began after it was UNLINKED;
//       every pop reads head and dereferences the node inside one read-side section.
// ABA. A pop reads head == A and A.next == B, then CAS(head, A -> B). The CAS is wrong only if,
// in between, A was popped and A's address pushed again (with another next). A's memory is
// reused (from the pool or by malloc) only after a grace period that began after A was
// unlinked (I3), which waits for this pop's read-side section to end; so
// while the pop can still execute its CAS, no node at address A can be linked again, and head
// == A means the same node A, whose next is still B (I2). Push needs no section: it never
// dereferences a shared node, and a CAS(head, A -> N) with N.next == A is correct whatever A's
// history (N.next is exactly the value it replaces).
//
// Contention. A push or pop whose CAS lost backs off exponentially (1, 2, 4, ... up to 32
// pauses, `_LockFreeBackoff`) before retrying, so the line holding head stays with one core
// for several operations instead of moving on every attempt: four threads alternating push
// and pop on two cores took 43 ns per element without it and 20 ns with it (a standalone loop;
// Concurrency Kit's ck_stack 32 ns in the same loop). A pop that finds head nil returns
// without entering a read-side section: nothing is dereferenced, and consumers polling an
// empty stack then cost one shared read of head (measured: 2 producers and 2 consumers, 67 ->
// 30-36 ns per element in three runs of QueueBenchmarks; the slow runs of 67-74 ns that still
// came afterwards were the node pool's, see "Locality" in CShims/ilk_node_pool.c).
//
// Memory orderings.
//   - push's successful CAS on head is `release`: it publishes the node's next and element to
//     the pop that reads head with `acquire`. Its failure is `relaxed`: the value found is only
//     stored into N.next (a private node) for another attempt.
//   - pop's load of head and its CAS's failure are `acquire` (pair with push's release, so the
//     node's next and element are visible before pop reads them); its successful CAS is
//     `acquire` too: it must see the element, published by the push's release.
//   - `next` is accessed with relaxed atomics: it is written before publication (I2) and read
//     after an acquire of the pointer to the node; the atomics only keep ThreadSanitizer's
//     view exact for the reads of retired-but-not-freed nodes.
//   - isEmpty is an acquire load of head: a snapshot.
//   - pop's first look at head, before the read-side section, is relaxed: when it reads nil,
//     nothing is read through it; when not, the acquire load inside the section is the one
//     that pairs with push.
// Linearization points: push at its successful CAS; a pop that returns an element at its
// successful CAS; a pop that returns nil at its load of a nil head (the first look, or the
// one inside the section).
//
// Progress: lock-free. A CAS fails only because another push or pop succeeded; retirement
// (ilk_node_retire) never waits: liburcu's worker thread waits out the grace period.

import CInterlock

/// A lock-free last-in, first-out stack: the heir of `OSAtomicEnqueue` and `OSAtomicDequeue`.
///
/// Any number of threads may push and pop at once; no operation waits for another thread
/// (lock-free), and every operation takes effect atomically at one instant between its call
/// and its return (linearizable). Elements are neither lost nor duplicated.
///
/// Memory of popped nodes is reclaimed with userspace RCU (liburcu): it is freed after every
/// thread that might still read it has moved on, so there is no use-after-free and no ABA.
/// Threads need no registration: any thread may call in.
///
/// Elements still in the stack are released when the stack is deinitialized (iteratively: a
/// stack of millions of elements deinitializes without deep recursion).
///
/// - Note: ``LockFreeQueue`` is the first-in, first-out counterpart.
public final class LockFreeStack<Element> {
    /// The head pointer, alone on its cache line.
    @usableFromInline internal let _words: _PaddedWords

    /// Creates an empty stack.
    @inlinable
    public init() {
        _words = _PaddedWords()
    }

    deinit {
        // No other thread can reach the stack any more: walk and free without RCU.
        var node = _words.first.pointee
        while let current = node {
            node = Self._next(current).pointee
            Self._element(current).deinitialize(count: 1)
            ilk_node_free(current)  // free(), whichever allocator path made it
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

    /// Hands an unlinked node to RCU: reused (pool) or freed (aligned block) after a grace period.
    @inlinable @inline(__always)
    internal static func _retireNode(_ node: UnsafeMutableRawPointer) {
        _inject(.rcuRetire)
        if _pooled { ilk_node_retire(node, _nodeSize) } else { ilk_rcu_retire(node, _nodeSize) }
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
        // SAFETY: the node is fresh, large and aligned enough for a next word and an Element;
        // binding the memory is free at run time.
        node.bindMemory(to: UnsafeMutableRawPointer?.self, capacity: 1)
        (node + Self._elementOffset).initializeMemory(as: Element.self, repeating: element, count: 1)
        let head = _words.first
        var top = ilk_atomic_load_ptr(head, ILK_ORDER_RELAXED)  // only a guess for the CAS
        var backoff = _LockFreeBackoff()
        while true {
            // Relaxed: the node is private until the CAS below publishes it (I2).
            ilk_atomic_store_ptr(Self._next(node), top, ILK_ORDER_RELAXED)
            // Release on success: publishes next and the element to pop's acquire.
            if ilk_atomic_cas_weak_ptr(head, &top, node, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED) {
                return
            }
            backoff.pause()
        }
    }

    /// Removes and returns the element on top of the stack, or `nil` when the stack is empty.
    ///
    /// Lock-free. The popped node is freed after a grace period, in a batch, by liburcu's
    /// worker thread.
    @inlinable
    public func pop() -> Element? {
        let head = _words.first
        // An empty stack needs no read-side section: nothing is dereferenced. Relaxed: a nil
        // head publishes nothing (the linearization point of a pop that returns nil).
        if ilk_atomic_load_ptr(head, ILK_ORDER_RELAXED) == nil { return nil }
        ilk_rcu_read_lock()
        // Acquire: pairs with push's release CAS, so top's next and element are visible.
        var top = ilk_atomic_load_ptr(head, ILK_ORDER_ACQUIRE)
        var backoff = _LockFreeBackoff()
        while let node = top {
            // SAFETY: node was reachable from head inside this read-side section, so it is
            // not freed before ilk_rcu_read_unlock (I3).
            let next = ilk_atomic_load_ptr(Self._next(node), ILK_ORDER_RELAXED)  // I2: immutable
            if ilk_atomic_cas_weak_ptr(head, &top, next, ILK_ORDER_ACQUIRE, ILK_ORDER_ACQUIRE) {
                break
            }
            backoff.pause()
        }
        ilk_rcu_read_unlock()
        guard let node = top else { return nil }
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
