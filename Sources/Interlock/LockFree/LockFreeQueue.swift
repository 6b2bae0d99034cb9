// LockFreeQueue: a lock-free FIFO, the heir of OSAtomicFifoEnqueue/OSAtomicFifoDequeue.
//
// Algorithm: the FAAArrayQueue of P. Ramalhete and A. Correia ("FAAArrayQueue - MPMC
// lock-free queue (part 4 of 4)", Concurrency Freaks, 2016; the same idea as the segments of
// Morrison & Afek's LCRQ, PPoPP 2013, and Yang & Mellor-Crummey's wait-free queue, PPoPP
// 2016): a Michael-Scott linked list (PODC 1996) whose nodes are segments of many slots. An
// enqueuer claims a slot of the tail segment with fetch-and-add on the segment's enqueue index
// and fills it; a dequeuer claims a slot of the head segment with fetch-and-add on its dequeue
// index and empties it. Contended operations are one fetch-and-add each instead of a CAS retry
// loop, and there is one allocation per segment rather than one per element. Elements are
// stored in the slots themselves (no box per element). Reclamation: userspace RCU (liburcu
// urcu-bp; see LockFreeSupport.swift and CShims/include/ilk_rcu.h).
//
// Layout: head and tail each alone on a 128-byte line (`_PaddedWords.first`/`.second`); the
// segment layout and its constants (slotCount = 1024 for small elements; consecutive indices
// remapped onto different cache lines) are in LockFreeQueueSegment.swift. The algorithm lives
// in `_QueueCore`, generic over the segment geometry: `LockFreeQueue` is the core with the
// standard geometry (after inlining, the same code as a class holding the words itself), and
// the tests run the same code with segments of a few slots.
//
// Three refinements of the published algorithm, each measured on the queue benchmarks (2-core
// VM; the README has the final table):
//   - A dequeuer that claims an index whose enqueuer has claimed it too but not filled it yet
//     (the few instructions between the enqueuer's fetch-and-add and its CAS) waits for it a
//     bounded moment (`_awaitRounds` pauses) before poisoning the slot. Without this, a
//     consumer that follows right behind a producer poisoned most slots, and each poisoned
//     slot costs the producer a retry and the queue a slot: one producer and one consumer
//     took 151 ns per element, against 41 ns for liburcu's wait-free queue.
//   - A dequeuer that sees the slot of the current dequeue index already FULL claims exactly
//     that index with a CAS on the dequeue index instead of a fetch-and-add. It then needs
//     neither the enqueue index (whose line the enqueuers are writing) nor any waiting, and
//     cannot claim a slot that no enqueuer has reached. It tries this once per dequeue: when
//     the CAS fails, dequeuers are contending, and after a short step back
//     (`_dequeueContentionPause`, which lets the line stay with the winner's core for a few
//     operations) the fetch-and-add (which never fails) takes over. One producer and one
//     consumer: 45-50 -> 24-36 ns per element; four threads alternating: 48-52 (a tie with a
//     mutex around a ring) -> 24-27 ns with the step back, 16 pauses (8 and 32 measured worse
//     or no better).
//   - Index remapping (LockFreeQueueSegment.swift): 50-56 -> 45-50 ns per element with one
//     producer and one consumer.
//
// Slot states (the slot's state word):
//
//     EMPTY (0)  initial. No element; no dequeuer has visited.
//     FULL  (1)  the enqueuer that claimed the slot stored its element, then CASed EMPTY->FULL
//                (release). Only the dequeuer that claims the slot may take it.
//     TAKEN (2)  final. The dequeuer that claimed the slot exchanged the state to TAKEN
//                (acquire): if it found FULL it moves the element out; if it found EMPTY it
//                has "poisoned" the slot, and the enqueuer's CAS will fail: that enqueuer
//                takes its element back (it never left its hands: nobody reads an EMPTY or
//                TAKEN slot's storage) and retries at a new index.
//
//     EMPTY --enqueuer CAS--> FULL --dequeuer exchange--> TAKEN
//     EMPTY --dequeuer exchange (poison)--> TAKEN
//
// Invariants.
//   I1. Each slot index of a segment is handed to at most one enqueuer and at most one
//       dequeuer (the fetch-and-adds return distinct values); only they touch the slot.
//   I2. The segments from head along `next` form a list; tail is head or a successor of head
//       (head moves past a segment only after tail has, see _advanceHead). `next` goes from nil
//       to a segment once and never changes again.
//   I3. A segment is linked as next only when its predecessor's enqueue index is >= slotCount
//       (every slot handed out), and head leaves a segment only when its dequeue index is
//       >= slotCount (every slot handed to a dequeuer too). So when a segment is retired, every
//       slot has been or will be resolved by its claimers, inside their read-side sections.
//   I4. A segment is retired once: by the dequeuer whose CAS moved head past it, after tail
//       had moved past it (I2); from then on no thread can load a pointer to it from head,
//       tail or a `next`, so threads that still use it are in read-side sections that began
//       before the retirement, and RCU frees it (or puts it in the block cache, for the next
//       segment of a queue with this segment size: CShims/include/ilk_block_cache.h) only after
//       they have ended. No use-after-free, and no address comes back while a CAS on head or
//       tail could compare against it (no ABA).
//   I5. Empty: at an instant where dequeueIndex >= min(enqueueIndex, slotCount) and next == nil
//       on the head segment, every enqueue that has linearized has been matched by a dequeue
//       that claimed its slot, so the queue is empty (up to in-flight operations, which are
//       linearized after). dequeue reads dequeueIndex, then enqueueIndex, then next: the
//       indices only grow and next only goes from nil to non-nil, so the condition held at the
//       instant of the first read.
//
//   I6. isEmpty. A slot in [dequeueIndex, enqueueIndex) may be claimed by an enqueuer that has
//       not filled it yet; that enqueue has not linearized, and a dequeuer may poison the slot
//       so that the element lands later, behind others. So the index rule of I5 cannot answer
//       `false` (the linearizability test caught it under ThreadSanitizer: isEmpty false while
//       the only insert in flight later came out after elements inserted after the isEmpty).
//       One attempt (`_isEmptyOnce`) answers `false` only on a FULL slot not yet claimed by a
//       dequeuer (an element at the instant of that load), and `true` only when no unclaimed
//       slot of any segment was FULL and the dequeue index d0 < slotCount first read from the
//       first segment S that dequeuers had not exhausted did not move during the scan: then no
//       dequeuer claimed a slot meanwhile, every slot read EMPTY (states only go EMPTY -> FULL
//       -> TAKEN) was EMPTY when d0 was read, and no later segment could be dequeued from (head
//       cannot pass a segment whose dequeue index is below slotCount): the queue was empty at
//       that read. Otherwise the attempt fails, and isEmpty tries again until one answers.
//       There is no answer after a number of failures: the index rule's `false` would count a
//       claimed, unfilled slot as an element, and a dequeue that returns nil after it shows
//       that no element was there (a test stalls enqueuers after their claim to check it).
//       Progress: an attempt fails only when S's dequeue index moved from d0, so some dequeuer's
//       fetch-and-add or CAS returned d0: it claimed slot d0 of S. Failed attempts name
//       distinct slots (the index only grows; a later attempt starts at a later index or
//       segment), and each slot has one dequeuer (I1). A claim takes an element (a dequeue
//       completes) or poisons the slot, and a segment has slotCount slots, each segment after
//       the first having been linked by an enqueue that completed at the link; so while isEmpty
//       keeps failing, other operations keep completing: lock-free, as the rest of the queue,
//       but not wait-free (a call can be overtaken forever by dequeuers that keep claiming).
//       Cost: an attempt reads the unclaimed slots of every linked segment (at most slotCount
//       each), and a call makes at most one attempt more than the slots that dequeuers claim
//       during it (usually none: one attempt, which stops at the first FULL slot). Between
//       attempts it pauses (growing to `_lockFreeMaxBackoff` rounds), and after
//       `_isEmptySpinningAttempts` failures yields the processor instead: a spinning caller
//       would only keep the claimants (or a preempted enqueuer, whose filled slot ends the
//       call) off its core. Each attempt is a read-side section of its own, so no section
//       spans a yield.
//
// Memory orderings.
//   - Slot state: the enqueuer's CAS EMPTY->FULL is `release` (publishes the element it just
//     stored); the dequeuer's exchange is `acquire` (pairs with it before moving the element
//     out). A failed enqueuer CAS is `relaxed`: it learns only that the slot is poisoned, and
//     its element is its own. Poisoning needs no release: nothing is published.
//   - The fetch-and-adds on the indices, the dequeue index's CAS and the loads of the indices
//     for the emptiness test are `seq_cst`: the emptiness argument (I5) compares two indices
//     read one after the other and needs them in one total order with the other threads'
//     increments. On x86-64 the fetch-and-add is `lock xadd` and the loads are plain moves
//     either way.
//   - Loads of a slot's state that only decide what to try next (is it FULL already? has its
//     enqueuer filled it yet?) are relaxed: the acquire exchange that follows decides.
//   - Loads of head, tail and `next` are `acquire`; the CAS that links a segment as `next` and
//     the CASes that swing head and tail are `release`: they publish the segment's contents
//     (its zeroed slots, its index 1 and the element in slot 0) to every thread that follows
//     the pointer. Failed CASes on these words are `relaxed`: the thread reloads and retries.
// Linearization points (Ramalhete & Correia): an enqueue at its successful slot CAS, or at the
// CAS that links the new segment holding its element; a dequeue that returns an element at
// its exchange (on the CAS path, the slot is FULL and the index ours when the CAS succeeds,
// so the exchange always finds FULL); a dequeue that returns nil at its load of dequeueIndex
// (I5).
//
// Progress: lock-free. An enqueuer retries only because a dequeuer poisoned its slot, or
// because the segment filled up (a new one is linked by somebody); a dequeuer retries after
// poisoning a slot, or when other threads claimed indices, linked a segment or moved head
// meanwhile. Claims, and so poisons, number at most slotCount per segment, and
// every segment after the first was linked by an enqueue that completed at the link: retries
// without end would mean operations completing without end. isEmpty retries only when a
// dequeuer claimed a slot (I6). The one wait, for an enqueuer to fill a claimed slot, is
// bounded; after it the slot is poisoned as in the published algorithm. No path waits
// unboundedly for another thread.

import CInterlock

/// A lock-free first-in, first-out queue: the heir of `OSAtomicFifoEnqueue` and
/// `OSAtomicFifoDequeue`.
///
/// Any number of threads may enqueue and dequeue at once; no operation waits for another
/// thread (lock-free), and every operation takes effect atomically at one instant between its
/// call and its return (linearizable). Elements are neither lost nor duplicated, and come out
/// in the order they went in: per producer, and in the linearization order overall.
///
/// Elements live in segments of many slots (one allocation per segment, not per element);
/// emptied segments are reclaimed with userspace RCU (liburcu) once no thread can still read
/// them, and kept for new segments: up to as many as the program's queues took in the last one
/// to two seconds, within 128 KiB and 16 MiB per segment size (a queue of `Int` has 16 KiB
/// segments of 1,024 elements), so that a queue whose depth swings finds its segments again at
/// the next swing. When fewer are needed, the rest goes back to `malloc` as the queues go on.
/// Threads need no registration: any thread may call in.
///
/// Elements still in the queue are released when the queue is deinitialized (iteratively: a
/// queue of millions of elements deinitializes without deep recursion), and its segments are
/// kept for the next queue of the same element layout, within the same bounds.
///
/// - Note: ``LockFreeStack`` is the last-in, first-out counterpart.
public final class LockFreeQueue<Element> {
    @usableFromInline internal typealias _Core = _QueueCore<Element, _StandardQueueGeometry>
    @usableFromInline internal typealias _Segment = _Core._Segment

    /// The state and the algorithm; the queue's only stored property.
    @usableFromInline internal let _core: _Core

    /// Creates an empty queue.
    @inlinable
    public init() {
        _core = _Core()
    }

    deinit {
        _core.destroy()
    }

    /// Adds `element` at the back of the queue.
    ///
    /// Lock-free; usually one fetch-and-add and one compare-and-swap.
    @inlinable
    public func enqueue(_ element: Element) {
        _core.enqueue(element)
    }

    /// Removes and returns the element at the front of the queue, or `nil` when it is empty.
    ///
    /// Lock-free; usually one fetch-and-add and one exchange. Emptied segments are freed, or
    /// kept for reuse, after a grace period, in batches, by liburcu's worker thread.
    @inlinable
    public func dequeue() -> Element? {
        _core.dequeue()
    }

    /// Whether the queue was empty at the instant of the call: a snapshot, which other threads
    /// may change before the caller looks at it.
    ///
    /// Linearizable (the argument is I5 and I6 in the file comment): `false` only when an
    /// element was in the queue at some instant of the call, `true` only when none was.
    /// Lock-free: usually one look at the slots between the two ends of the queue, looked at
    /// again for as long as dequeuers claim slots during the look.
    @inlinable
    public var isEmpty: Bool {
        _core.isEmpty
    }
}

/// The queue's algorithm (the file comment), over segments of `Geometry.slotCount` slots: the
/// whole state of a `LockFreeQueue` and all its code. `LockFreeQueue` is this with the
/// standard geometry; tests run the same code with tiny segments (so that a few operations
/// cross several of them) or huge ones. The geometry is a type, not a stored value, so each
/// queue's slot count stays a constant in its specialized code.
@frozen @usableFromInline
internal struct _QueueCore<Element, Geometry: _QueueGeometry> {
    @usableFromInline internal typealias _Segment = _QueueSegment<Element, Geometry>

    /// Head (`first`) and tail (`second`), each alone on its cache line.
    @usableFromInline internal let _words: _PaddedWords

    /// An empty queue: one segment, which head and tail both designate.
    @inlinable
    internal init() {
        _words = _PaddedWords()
        let segment = _Segment.allocate()
        // Relaxed: the queue is not shared yet; whatever shares it publishes these stores.
        ilk_atomic_store_ptr(_words.first, segment.base, ILK_ORDER_RELAXED)
        ilk_atomic_store_ptr(_words.second, segment.base, ILK_ORDER_RELAXED)
    }

    /// Releases the elements left in FULL slots, gives back the segments (`discard`: to the
    /// block cache) and frees the words, iteratively and without RCU: only from the owner's
    /// deinit, when no other thread can reach the queue any more.
    @usableFromInline
    internal func destroy() {
        var block = _words.first.pointee
        while let current = block {
            let segment = _Segment(current)
            for index in 0..<_Segment.slotCount where segment.state(index).pointee == _Segment.full {
                segment.element(index).deinitialize(count: 1)
            }
            block = segment.next.pointee
            segment.discard()
        }
        _words.deallocate()
    }

    /// `LockFreeQueue.enqueue(_:)`.
    @inlinable @inline(__always)
    internal func enqueue(_ element: Element) {
        let slotCount = UInt64(_Segment.slotCount)
        ilk_rcu_read_lock()
        defer { ilk_rcu_read_unlock() }
        while true {
            // Acquire: pairs with the release CAS that installed this tail (segment contents).
            let tail = _Segment(ilk_atomic_load_ptr(_words.second, ILK_ORDER_ACQUIRE)!)
            let index = ilk_atomic_fetch_add_u64(tail.enqueueIndex, 1, ILK_ORDER_SEQ_CST)
            if index < slotCount {
                let slot = Int(truncatingIfNeeded: index)
                _inject(.queueSlotHandOff)
                // SAFETY: I1: this thread alone writes this slot's storage until FULL.
                tail.rawElement(slot).initializeMemory(as: Element.self, to: element)
                // Release: publishes the element to the dequeuer's acquire exchange.
                if ilk_atomic_cas_value_u64(
                    tail.state(slot), _Segment.empty, _Segment.full, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED
                ) == _Segment.empty {
                    return
                }
                // Poisoned (TAKEN): the dequeuer never read the storage; take the copy back.
                tail.element(slot).deinitialize(count: 1)
                continue
            }
            if _enqueueInNewSegment(element, after: tail) {
                return
            }
        }
    }

    /// The tail segment is full: help move tail, or link a new segment holding `element`.
    /// - Returns: whether `element` was enqueued.
    @inlinable @inline(never)
    internal func _enqueueInNewSegment(_ element: Element, after tail: _Segment) -> Bool {
        guard ilk_atomic_load_ptr(_words.second, ILK_ORDER_ACQUIRE) == tail.base else {
            return false  // tail moved meanwhile
        }
        if let next = ilk_atomic_load_ptr(tail.next, ILK_ORDER_ACQUIRE) {
            // Help the enqueuer that linked next. Release: passes on what we acquired from next.
            _ = ilk_atomic_cas_value_ptr(_words.second, tail.base, next, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
            return false
        }
        let fresh = _Segment.allocate()
        // Relaxed: all published by the release CAS on tail.next below.
        fresh.rawElement(0).initializeMemory(as: Element.self, to: element)
        ilk_atomic_store_u64(fresh.state(0), _Segment.full, ILK_ORDER_RELAXED)
        ilk_atomic_store_u64(fresh.enqueueIndex, 1, ILK_ORDER_RELAXED)
        if ilk_atomic_cas_value_ptr(tail.next, nil, fresh.base, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED) == nil {
            // Release: publishes the segment to threads that load tail. Failure: someone helped.
            _ = ilk_atomic_cas_value_ptr(_words.second, tail.base, fresh.base, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
            return true
        }
        // Another enqueuer linked its segment first; ours was never visible to anyone.
        fresh.element(0).deinitialize(count: 1)
        fresh.discard()
        return false
    }

    /// `LockFreeQueue.dequeue()`.
    @inlinable @inline(__always)
    internal func dequeue() -> Element? {
        let slotCount = UInt64(_Segment.slotCount)
        ilk_rcu_read_lock()
        defer { ilk_rcu_read_unlock() }
        var firstLook = true
        while true {
            // Acquire: pairs with the release CAS that installed this head (segment contents).
            let head = _Segment(ilk_atomic_load_ptr(_words.first, ILK_ORDER_ACQUIRE)!)
            // I5: dequeueIndex first, then enqueueIndex, then next.
            let dequeued = ilk_atomic_load_u64(head.dequeueIndex, ILK_ORDER_SEQ_CST)
            if dequeued < slotCount && firstLook {
                firstLook = false
                let slot = Int(truncatingIfNeeded: dequeued)
                // Claiming a slot already seen FULL: take exactly that index with a CAS, which
                // skips the enqueue index (whose line the enqueuers are writing) and cannot
                // claim a slot no enqueuer has reached. Relaxed: a hint; the acquire exchange
                // decides.
                if ilk_atomic_load_u64(head.state(slot), ILK_ORDER_RELAXED) == _Segment.full {
                    if ilk_atomic_cas_value_u64(
                        head.dequeueIndex, dequeued, dequeued &+ 1, ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED
                    ) == dequeued {
                        // I1: ours alone now. Acquire: pairs with the enqueuer's release CAS.
                        _ = ilk_atomic_exchange_u64(head.state(slot), _Segment.taken, ILK_ORDER_ACQUIRE)
                        return head.element(slot).move()
                    }
                    // Another dequeuer took that index: dequeuers contend. Step back for a
                    // moment, so the index's line stays with the core that won for a few
                    // operations, then take an index with fetch-and-add.
                    for _ in 0..<_dequeueContentionPause { ilk_spin_pause() }
                    continue
                }
            }
            let enqueued = ilk_atomic_load_u64(head.enqueueIndex, ILK_ORDER_SEQ_CST)
            if dequeued >= Swift.min(enqueued, slotCount) {
                // Every slot handed to an enqueuer was handed to a dequeuer too.
                guard let next = ilk_atomic_load_ptr(head.next, ILK_ORDER_ACQUIRE) else {
                    return nil
                }
                if dequeued >= slotCount {
                    _advanceHead(from: head, to: next)
                }
                continue  // or enqueueIndex grew after we read it: look again
            }
            let index = ilk_atomic_fetch_add_u64(head.dequeueIndex, 1, ILK_ORDER_SEQ_CST)
            if index >= slotCount {
                continue  // the segment ran out under us: the test above moves head
            }
            let slot = Int(truncatingIfNeeded: index)
            _inject(.queueSlotHandOff)
            _awaitEnqueuer(head, slot: slot, index: index)
            // Acquire: pairs with the enqueuer's release CAS EMPTY -> FULL.
            if ilk_atomic_exchange_u64(head.state(slot), _Segment.taken, ILK_ORDER_ACQUIRE) == _Segment.full {
                // SAFETY: I1: this thread alone claimed the slot; the element is published.
                return head.element(slot).move()
            }
            // The slot was EMPTY: poisoned; its enqueuer retries elsewhere.
        }
    }

    /// Before poisoning slot `slot` (claimed by this dequeuer at `index`), gives the enqueuer
    /// that already claimed the same index a bounded moment to finish storing its element.
    ///
    /// An enqueuer fills its slot a few instructions after its fetch-and-add; a dequeuer that
    /// arrives in between would poison the slot, sending the enqueuer to a new index and
    /// burning a slot (in the one-producer, one-consumer pattern with a near-empty queue this
    /// happened on most transfers and made each cost several times more). Waiting at most
    /// `_awaitRounds` pauses keeps the dequeue lock-free: an enqueuer that was descheduled in
    /// that window is poisoned as before and retries.
    @inlinable @inline(__always)
    internal func _awaitEnqueuer(_ head: _Segment, slot: Int, index: UInt64) {
        // Relaxed: a hint; the acquire exchange that follows decides.
        if ilk_atomic_load_u64(head.state(slot), ILK_ORDER_RELAXED) != _Segment.empty { return }
        // Only when an enqueuer holds this index (I1); otherwise nobody is coming soon.
        // Relaxed: a hint as well.
        if index >= ilk_atomic_load_u64(head.enqueueIndex, ILK_ORDER_RELAXED) { return }
        _awaitEnqueuerSlow(head, slot: slot)
    }

    @inlinable @inline(never)
    internal func _awaitEnqueuerSlow(_ head: _Segment, slot: Int) {
        var rounds = _awaitRounds
        repeat {
            ilk_spin_pause()
            // Relaxed: a hint; the acquire exchange in dequeue() decides.
            if ilk_atomic_load_u64(head.state(slot), ILK_ORDER_RELAXED) != _Segment.empty { return }
            rounds &-= 1
        } while rounds > 0
    }

    /// Moves head from the exhausted segment `head` to `next`, moving tail first if it lags,
    /// and retires `head` when this thread's CAS moved head.
    @inlinable @inline(never)
    internal func _advanceHead(from head: _Segment, to next: UnsafeMutableRawPointer) {
        // I2: tail must leave the segment before head does, or an enqueuer could load it from
        // tail after it was retired.
        if ilk_atomic_load_ptr(_words.second, ILK_ORDER_ACQUIRE) == head.base {
            _ = ilk_atomic_cas_value_ptr(_words.second, head.base, next, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
        }
        if ilk_atomic_cas_value_ptr(_words.first, head.base, next, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED) == head.base {
            _inject(.rcuRetire)
            // I4; after the grace period the segment waits in the block cache for a new one.
            ilk_rcu_retire_cached(head.base, _Segment.byteCount, _Segment.blockAlignment)
        }
    }

    /// `LockFreeQueue.isEmpty`: attempts (`_isEmptyOnce`) until one answers (I6). Each attempt
    /// has a read-side section of its own, so that no section spans the backoff below.
    @inlinable @inline(__always)
    internal var isEmpty: Bool {
        ilk_rcu_read_lock()
        let answer = _isEmptyOnce()
        ilk_rcu_read_unlock()
        return answer ?? _isEmptyAfterFailedAttempt()
    }

    /// The attempts after a failed first one, for as long as it takes (I6: each failure means a
    /// dequeuer claimed a slot meanwhile, so other operations progress). A short pause, growing
    /// to `_lockFreeMaxBackoff` rounds, between the first `_isEmptySpinningAttempts` attempts;
    /// then a yield of the processor between attempts, so that a scan that keeps losing the
    /// race does not keep the claimants it waits out (or a preempted enqueuer, whose filled slot
    /// would end the call) off a core they share with it.
    @inlinable @inline(never)
    internal func _isEmptyAfterFailedAttempt() -> Bool {
        var failures = 1
        var backoff = _LockFreeBackoff()
        while true {
            if failures < _isEmptySpinningAttempts { backoff.pause() } else { ilk_thread_yield() }
            ilk_rcu_read_lock()
            let answer = _isEmptyOnce()
            ilk_rcu_read_unlock()
            if let answer { return answer }
            failures &+= 1
        }
    }

    /// One attempt (I6): `false` if an unclaimed slot is FULL; `true` if no unclaimed slot is
    /// FULL and the first segment not exhausted by dequeuers kept its dequeue index throughout
    /// (nil when it did not: try again).
    @usableFromInline
    internal func _isEmptyOnce() -> Bool? {
        let slotCount = UInt64(_Segment.slotCount)
        var segment = _Segment(ilk_atomic_load_ptr(_words.first, ILK_ORDER_ACQUIRE)!)
        var first: (segment: _Segment, dequeued: UInt64)? = nil
        while true {
            let dequeued = ilk_atomic_load_u64(segment.dequeueIndex, ILK_ORDER_SEQ_CST)
            let enqueued = ilk_atomic_load_u64(segment.enqueueIndex, ILK_ORDER_SEQ_CST)
            if dequeued < slotCount {
                if first == nil { first = (segment, dequeued) }
                var index = dequeued
                while index < Swift.min(enqueued, slotCount) {
                    // Relaxed: FULL means its enqueue has linearized and no dequeuer has taken
                    // it yet: an element at this instant. No element is read.
                    if ilk_atomic_load_u64(segment.state(Int(index)), ILK_ORDER_RELAXED) == _Segment.full {
                        return false
                    }
                    index &+= 1
                }
            }
            guard let next = ilk_atomic_load_ptr(segment.next, ILK_ORDER_ACQUIRE) else { break }
            segment = _Segment(next)
        }
        guard let first else { return true }
        // Seq_cst: as the first read of it.
        return ilk_atomic_load_u64(first.segment.dequeueIndex, ILK_ORDER_SEQ_CST) == first.dequeued ? true : nil
    }
}

/// Failed attempts after which `isEmpty` yields the processor between attempts instead of
/// pausing (see `_isEmptyAfterFailedAttempt`).
@usableFromInline internal let _isEmptySpinningAttempts = 64

extension LockFreeQueue: @unchecked Sendable where Element: Sendable {}

/// Pause rounds a dequeuer steps back after losing the CAS on the dequeue index to another
/// dequeuer (see `dequeue()`).
@usableFromInline internal let _dequeueContentionPause = 16

/// Pause rounds a dequeuer waits for the enqueuer of its slot before poisoning it (see
/// `_awaitEnqueuer`): under a microsecond (a pause is 25 ns on a 2-vCPU x86-64 machine), far
/// more than the few instructions a running enqueuer needs, and little wasted when it was
/// preempted in between (128 rounds measured the same on a quiet machine).
@usableFromInline internal let _awaitRounds = 32
