// BoundedChannel: a bounded multi-producer, multi-consumer FIFO for threads and tasks (Go's
// channel, crossbeam's bounded channel), built from two of Interlock's semaphores and a ring of
// ticketed slots. Capacity 0 (a rendezvous) has its own single-slot protocol
// (ChannelRendezvous.swift); this file is the buffered channel and the public API.
//
// Algorithm (capacity C > 0):
//
//   spaces   a Semaphore of C units: a unit is the right to put one element in the ring
//   items    a Semaphore of 0 units: a unit is the right to take one published element
//   tail     the next send ticket (bit 62: CLOSED); head: the next receive ticket
//   ring     C slots, each a stamp and an element; slot i serves tickets i, i + C, i + 2C, ...
//            stamp == t: free for send ticket t; stamp == t + 1: holds the element of ticket t
//
//   send(e)     spaces.wait(); t = tail.fetch_add(1); t has CLOSED: spaces.signal(), throw;
//               wait until stamp(t) == t; store e; stamp = t + 1; items.signal()
//   receive()   items.wait(); h = head.fetch_add(1);
//               wait until stamp(h) == h + 1 (then take e, stamp = h + C, spaces.signal(),
//               return e) or the channel closed at or before ticket h (then items.signal(),
//               return nil)
//   close()     T = tail.fetch_or(CLOSED) (the first time only); closedAt = T; then a
//               practically endless supply of units to both semaphores, which wakes every
//               waiter and lets every later wait through at once
//
// Why this design: the ring is Vyukov's bounded MPMC queue (crossbeam's array channel uses the
// same stamps), so a send or receive that finds room or an element is a few atomic instructions
// and no lock; the semaphores add the counting that lets a full or empty channel sleep, with
// FIFO waiters, task waiters and cancellation that Semaphore already proves (semaphore.pml). A
// mutex around a ring (Go's channels, the DispatchSemaphore buffer) serializes every operation;
// an LCRQ-style queue avoids waiting on a slot's late writer but needs a 128-bit CAS and grows
// without bound, which a bounded channel cannot use. The price of the ring is the slot wait
// below, when the sender or receiver of a slot is preempted between its ticket and its store.
//
// The waits on spaces and items are Semaphore's: one atomic instruction when a unit is free,
// otherwise a FIFO queue shared by threads (futex) and tasks (continuations), with its timeouts
// and cancellation (Semaphore.swift, Semaphore+Async.swift). A wait that ends without a unit
// (deadline, cancellation) has touched neither the ring nor the tickets: nothing to undo.
//
// Invariants:
//   - Never more than C elements buffered: an element is stored only with a spaces unit, whose
//     unit comes back only after the element is taken out (or its send failed before storing).
//   - Every ticket below closedAt = T is stored exactly once (its sender got it before CLOSED,
//     and nothing after the fetch_add can fail); no ticket at or above T is ever stored.
//   - Receivers and elements: items counts published elements (before close), so a receiver
//     that took a unit before close takes a ticket below the tickets claimed; after close the
//     supply lets any number through, and the first T receive tickets are exactly the T elements:
//     whichever receivers draw them take them, every other returns nil. So nothing sent before
//     close is lost, and nil comes only once every element has a receiver.
//   - FIFO: elements leave in ticket order, and a sender's tickets grow with its sends, so each
//     producer's elements keep their order; a send is linearized at its ticket, a receive at
//     its ticket, close at its fetch_or.
//   - A slot's wait (stamp not yet there) waits for one operation already under way: the sender
//     of ticket t, or the receiver of ticket t - C, both past every blocking step, but possibly
//     preempted there. It spins briefly, then sleeps on the stamp: it sets the stamp's WAIT bit
//     (bit 63) with a CAS and futex-waits on the stamp's low 32 bits, which the awaited store
//     changes (tickets differ in their low half: the capacity is below 2^31). Every stamp store
//     is an exchange, which wakes the slot's sleepers when the value it replaced had WAIT.
//     Deciding figure: with yields instead (4 producers and 4 consumers on 2 cores, capacity
//     64), 45 % of the CPU time went to sched_yield and its context switches, and an element cost
//     451 ns against 293 for a DispatchSemaphore buffer; the exchanges cost the uncontended
//     path two locked instructions instead of two stores.
//   - No receiver sleeps on a slot whose ticket the close refused (at or above closedAt), so the
//     close wakes no slot: before closedAt is stored, the receivers holding items units are at
//     most the elements stored, so their tickets are all below T; the units that let any more
//     through are given after closedAt's release store, and a receiver that took one reads
//     closedAt (acquire, through the unit's release chain) before it would sleep.
//   - Fairness: senders wait in spaces' FIFO and receivers in items' (threads and tasks in one
//     order each); a waiter is overtaken only as Semaphore's fairness note says (a waiter that is
//     still joining the queue, by waiters that commit meanwhile, each once).
//
// Memory ordering (AArch64 as x86-64): the element travels through its slot's stamp. A sender's
// acquire load of stamp == t pairs with the release store of t by the receiver that emptied the
// slot (its move-out happens before this store of the element); its release store of t + 1
// publishes the element to the receiver's acquire load of t + 1. The receive tickets are relaxed
// read-modify-writes: they only make tickets unique; no data moves with them. A send ticket is a
// release, for `count` alone (its comment). closedAt is stored
// with release after the fetch_or and loaded with acquire by a receiver whose slot is not ready:
// a receiver that reads T knows no ticket from T on will ever be stored. The semaphores' own
// orderings (signal release, wait acquire) order nothing the stamps do not already order.
//
// Model: Verification/Models/channel.pml (the ring, its slot sleeps and close, with mutants that
// must fail) and channel_rendezvous.pml (capacity 0), both in `make verify`.
//
// Layout: tail, head and closedAt on separate 128-byte spans (senders write tail, receivers
// head); the ring is one allocation of C stamps and C elements, made at init.

import CInterlock

/// Thrown by a send on a closed ``BoundedChannel``: the element was not sent.
public struct ChannelClosedError: Error, Sendable, Equatable {
    /// Creates the error.
    public init() {}
}

/// How a ``BoundedChannel/receive(before:)`` ended.
public enum ChannelReceiveResult<Element> {
    /// An element was received.
    case element(Element)
    /// The deadline passed first; nothing was taken.
    case timedOut
    /// The channel is closed and every element sent before the close has been received.
    case closed
}

extension ChannelReceiveResult: Sendable where Element: Sendable {}

extension ChannelReceiveResult {
    /// The element, if this result carries one.
    @inlinable internal var receivedElement: Element? {
        if case .element(let element) = self { return element }
        return nil
    }
}

/// The ticket and close words of a ``BoundedChannel`` (see the file comment).
@usableFromInline
internal struct _ChannelState {
    @usableFromInline var tail: UInt64 = 0
    // swift-format-ignore
    @usableFromInline var _padding1: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                      UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    @usableFromInline var head: UInt64 = 0
    // swift-format-ignore
    @usableFromInline var _padding2: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                      UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    /// The first send ticket that the close refused (UInt64.max while open).
    @usableFromInline var closedAt: UInt64 = .max
    /// The rendezvous slot's word (ChannelRendezvous.swift); unused by a buffered channel.
    @usableFromInline var slot: UInt32 = 0

    @inlinable init() {}
}

/// A bounded FIFO channel that many producers and many consumers share, threads and tasks alike:
/// a full channel makes senders wait (backpressure), an empty one makes receivers wait, and
/// ``close()`` ends it cleanly. Go's channel and crossbeam's bounded channel, for Swift.
///
/// ```swift
/// let jobs = BoundedChannel<Job>(capacity: 64)
/// // producers
/// try jobs.send(job)                  // a thread: blocks while 64 jobs wait
/// try await jobs.send(job)            // a task: suspends instead
/// // consumers
/// while let job = jobs.receive() { run(job) }         // a thread, until closed and drained
/// for try await job in jobs { await run(job) }        // a task
/// // the producer that knows the work is over
/// jobs.close()
/// ```
///
/// - Order: elements come out in the order of their sends (each sender's in the order it sent
///   them), each to exactly one receiver; none is lost or duplicated.
/// - Capacity: never more than `capacity` elements are buffered. A capacity of 0 makes a
///   rendezvous: `send` returns once a receiver has taken the element.
/// - Close: ``close()`` is idempotent. Receivers first drain what was sent before it, then
///   `receive` returns `nil`. A sender waiting at the close, or sending after it, throws
///   ``ChannelClosedError`` and its element is not delivered (it is released).
/// - Waiting: threads block in the kernel, tasks suspend (never blocking a thread of the
///   cooperative pool); both may wait on one channel at once. Waiting senders are served in
///   arrival order, and so are waiting receivers, threads and tasks in one order
///   (``Semaphore``'s fairness: a waiter still joining the queue can be overtaken by those that
///   join meanwhile, each once).
/// - Cancellation and deadlines: a send that gives up did not send; a receive that gives up took
///   nothing (the element goes to the next receiver); nothing is left behind.
/// - Memory: the channel keeps no element alive once it was received or the channel was
///   deinitialised.
/// - Cost: when the channel is neither full nor empty, a send or receive is a few atomic
///   instructions, no lock and no system call.
///
/// - Warning: `BoundedChannel(capacity:)` with a negative capacity traps.
public final class BoundedChannel<Element: Sendable>: @unchecked Sendable {
    // The first stored property, at a fixed offset of the object's allocation (_stateField).
    @usableFromInline internal var _storage = _ChannelState()
    @usableFromInline internal let _capacity: Int
    /// Rights to store an element (capacity units; 1 for a rendezvous: the one slot).
    @usableFromInline internal let _spaces: Semaphore
    /// Rights to take a published element.
    @usableFromInline internal let _items: Semaphore
    /// A rendezvous' acknowledgements (a receiver took the element); unused when buffered.
    @usableFromInline internal let _acks: Semaphore
    /// The ring's stamps (capacity of them; one for a rendezvous, unused).
    @usableFromInline internal let _stamps: UnsafeMutablePointer<UInt64>
    /// The ring's elements, initialized exactly where a stamp says an element is stored.
    @usableFromInline internal let _elements: UnsafeMutablePointer<Element>

    /// Creates a channel that buffers at most `capacity` elements.
    /// - Parameter capacity: the most elements buffered at once; 0 for a rendezvous, in which a
    ///   send returns once a receiver has taken its element.
    /// - Warning: A negative capacity traps with a message.
    public init(capacity: Int) {
        if capacity < 0 {
            _lockMisuse("BoundedChannel", name: nil, "init(capacity:) with a negative capacity (\(capacity))")
        }
        if capacity > BoundedChannel._maximumCapacity {
            _lockMisuse(
                "BoundedChannel", name: nil,
                "init(capacity:) with a capacity of \(capacity), above the largest supported, \(BoundedChannel._maximumCapacity)"
            )
        }
        _capacity = capacity
        let slots = Swift.max(capacity, 1)
        _spaces = Semaphore(value: slots)
        _items = Semaphore(value: 0)
        _acks = Semaphore(value: 0)
        _stamps = .allocate(capacity: slots)
        for index in 0..<slots { (_stamps + index).initialize(to: UInt64(index)) }
        _elements = .allocate(capacity: slots)
        #if INTERLOCK_CONTENTION
        let me = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        _spaces._serveChannel(me, sending: true)
        _acks._serveChannel(me, sending: true)
        _items._serveChannel(me, sending: false)
        #endif
    }

    deinit {
        // No other thread can reach the channel now, and no operation is under way: plain
        // reads. A buffered channel holds the elements of the tickets from head up to the last
        // one sent; a rendezvous, its slot's element while the slot is full.
        if _capacity == 0 {
            if _RendezvousSlot.holdsElement(_storage.slot) { _elements.deinitialize(count: 1) }
        } else {
            let sent =
                _storage.closedAt != .max ? _storage.closedAt : _storage.tail & ~BoundedChannel._closedBit
            var ticket = _storage.head
            while ticket < sent {
                (_elements + Int(ticket % UInt64(_capacity))).deinitialize(count: 1)
                ticket += 1
            }
        }
        _stamps.deallocate()
        _elements.deallocate()
    }

    /// The largest capacity: the ring is allocated at init, and a slot's consecutive tickets
    /// must differ in their low 32 bits (the half a sleeper waits on).
    public static var maximumCapacity: Int { _maximumCapacity }
    @usableFromInline internal static var _maximumCapacity: Int { 1 << 30 }

    @usableFromInline static var _closedBit: UInt64 { 1 << 62 }
    /// A stamp's WAIT bit: a thread sleeps on the slot (file comment).
    @usableFromInline static var _waitBit: UInt64 { 1 << 63 }
    /// The units each semaphore receives at close: enough for every later call to pass at once
    /// (a refused call gives its unit back, so they are never used up).
    @usableFromInline static var _closeUnits: Int64 { 1 << 40 }

    @inlinable @inline(__always)
    internal func _field<T>(_ field: KeyPath<_ChannelState, T>, as type: T.Type) -> UnsafeMutablePointer<T> {
        _stateField(of: self, field, as: type)
    }
    @inlinable @inline(__always) internal var _tail: UnsafeMutablePointer<UInt64> { _field(\.tail, as: UInt64.self) }
    @inlinable @inline(__always) internal var _head: UnsafeMutablePointer<UInt64> { _field(\.head, as: UInt64.self) }
    @inlinable @inline(__always) internal var _closedAt: UnsafeMutablePointer<UInt64> {
        _field(\.closedAt, as: UInt64.self)
    }
    @inlinable @inline(__always) internal var _slotWord: UnsafeMutablePointer<UInt32> {
        _field(\.slot, as: UInt32.self)
    }

    /// The most elements buffered at once (0: a rendezvous).
    public var capacity: Int { _capacity }

    /// The elements buffered now: a snapshot (a rendezvous: 1 while a sender's element waits for
    /// a receiver).
    public var count: Int {
        if _capacity == 0 {
            // Relaxed: a snapshot that orders nothing.
            return _RendezvousSlot.holdsElement(ilk_atomic_load_u32(_slotWord, ILK_ORDER_RELAXED)) ? 1 : 0
        }
        // Tail first, with acquire: it pairs with the release of the send that took the ticket,
        // which took its spaces unit after the receive that gave it back had moved head on; so
        // head, read after, is at least that far, and the difference never exceeds the capacity.
        // The refused tickets after a close do not count. Relaxed (head, closedAt): snapshots.
        let claimed = ilk_atomic_load_u64(_tail, ILK_ORDER_ACQUIRE) & ~BoundedChannel._closedBit
        let sent = Swift.min(claimed, ilk_atomic_load_u64(_closedAt, ILK_ORDER_RELAXED))
        let taken = ilk_atomic_load_u64(_head, ILK_ORDER_RELAXED)
        return sent > taken ? Int(sent - taken) : 0
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool {
        // Relaxed: a snapshot. A send or receive decides on its own words, not on this.
        ilk_atomic_load_u64(_closedAt, ILK_ORDER_RELAXED) != .max
            || ilk_atomic_load_u64(_tail, ILK_ORDER_RELAXED) & BoundedChannel._closedBit != 0
    }

    // MARK: - Threads

    /// Sends `element`, blocking while the channel is full (a rendezvous: until a receiver took
    /// it).
    ///
    /// Blocks the calling thread: unavailable in async code, where `try await send(_:)` suspends
    /// the task instead.
    /// - Throws: ``ChannelClosedError`` when the channel is closed before the element is sent
    ///   (also while this call waits); the element is then released, not delivered.
    @available(*, noasync, message: "blocks the thread; use 'try await send(_:)', which suspends the task")
    @inlinable
    public func send(_ element: sending Element) throws(ChannelClosedError) {
        if _capacity == 0 {
            try _rendezvousSendUntimed(element)
            return
        }
        _spaces.wait()
        try _store(element)
    }

    /// Sends `element`, waiting at most until `deadline` while the channel is full.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``trySend(_:)``.
    /// - Returns: `true` when the element was sent; `false` when the deadline passed first (the
    ///   element was not sent, and is released).
    /// - Throws: ``ChannelClosedError`` when the channel is closed first.
    @available(*, noasync, message: "blocks the thread; use 'try await send(_:)', which suspends the task")
    @inlinable
    public func send(_ element: sending Element, before deadline: ContinuousClock.Instant) throws(ChannelClosedError)
        -> Bool
    {
        if _capacity == 0 { return try _rendezvousSend(element, deadline: deadline) }
        guard _spaces.wait(before: deadline) else {
            if isClosed { throw ChannelClosedError() }
            return false
        }
        try _store(element)
        return true
    }

    /// Sends `element` if the channel has room now, without waiting. On a rendezvous, sends only
    /// when a receiver is already waiting, and returns once it took the element; a waiting
    /// receiver that does not take it within a millisecond (a task not yet running, say) leaves
    /// it unsent, and the call returns `false`.
    /// - Returns: `true` when the element was sent; `false` when the channel is full (the element
    ///   is released).
    /// - Throws: ``ChannelClosedError`` when the channel is closed.
    @inlinable
    public func trySend(_ element: sending Element) throws(ChannelClosedError) -> Bool {
        if _capacity == 0 { return try _rendezvousTrySend(element) }
        guard _spaces.tryWait() else {
            if isClosed { throw ChannelClosedError() }
            return false
        }
        try _store(element)
        return true
    }

    /// Receives the oldest element, blocking while the channel is empty.
    ///
    /// Blocks the calling thread: unavailable in async code, where `try await receive()`
    /// suspends the task instead.
    /// - Returns: The element; `nil` once the channel is closed and every element sent before the
    ///   close has been received.
    @available(*, noasync, message: "blocks the thread; use 'try await receive()', which suspends the task")
    @inlinable
    public func receive() -> Element? {
        if _capacity == 0 { return _rendezvousReceiveUntimed() }
        _items.wait()
        return _take()
    }

    /// Receives the oldest element, waiting at most until `deadline` while the channel is empty.
    ///
    /// Never times out before the deadline; a deadline already passed makes this a
    /// ``tryReceive()`` that tells an empty channel from a closed one.
    /// - Returns: ``ChannelReceiveResult/element(_:)``, ``ChannelReceiveResult/timedOut`` (nothing
    ///   was taken), or ``ChannelReceiveResult/closed`` once the channel is closed and drained.
    @available(*, noasync, message: "blocks the thread; use 'try await receive()', which suspends the task")
    @inlinable
    public func receive(before deadline: ContinuousClock.Instant) -> ChannelReceiveResult<Element> {
        if _capacity == 0 { return _rendezvousReceive(deadline: deadline) }
        guard _items.wait(before: deadline) else { return .timedOut }
        if let element = _take() { return .element(element) }
        return .closed
    }

    /// Receives the oldest element if one is buffered now, without waiting (a rendezvous: if a
    /// sender is waiting).
    /// - Returns: The element, or `nil` when the channel is empty now, or closed and drained
    ///   (``isClosed`` tells which).
    @inlinable
    public func tryReceive() -> Element? {
        if _capacity == 0 { return _rendezvousReceive(deadline: .now - .seconds(1)).receivedElement }
        guard _items.tryWait() else { return nil }
        return _take()
    }

    /// Closes the channel: later and waiting sends throw ``ChannelClosedError``; receivers get
    /// what was sent before, then `nil`. Idempotent; wakes every waiter.
    public func close() {
        if _capacity == 0 {
            _rendezvousClose()
            return
        }
        // Relaxed: the fetch_or only has to be one point in tail's order (the close's
        // linearization point); closedAt's release store below publishes what it decided.
        let old = ilk_atomic_fetch_or_u64(_tail, BoundedChannel._closedBit, ILK_ORDER_RELAXED)
        if old & BoundedChannel._closedBit != 0 { return }
        // Release: pairs with the acquire load of a receiver whose slot is not ready (_take).
        ilk_atomic_store_u64(_closedAt, old, ILK_ORDER_RELEASE)
        _spaces._signal(units: BoundedChannel._closeUnits)
        _items._signal(units: BoundedChannel._closeUnits)
    }

    // MARK: - The ring (capacity > 0)

    /// Stores `element` with a spaces unit held: takes a ticket, or gives the unit back and
    /// throws when the channel is closed.
    @inlinable
    internal func _store(_ element: sending Element) throws(ChannelClosedError) {
        // Release: only for `count`'s acquire load (the order of a receive's head increment
        // before this send's ticket); the element itself travels through the stamp.
        let ticket = ilk_atomic_fetch_add_u64(_tail, 1, ILK_ORDER_RELEASE)
        if _slowPath(ticket & BoundedChannel._closedBit != 0) {
            _spaces.signal()
            throw ChannelClosedError()
        }
        _inject(.channelSlotClaimed)
        let index = Int(ticket % UInt64(_capacity))
        let stamp = _stamps + index
        // Acquire: pairs with the release store of `ticket` by the receiver that emptied the slot.
        if _slowPath(ilk_atomic_load_u64(stamp, ILK_ORDER_ACQUIRE) != ticket) { _awaitStamp(stamp, ticket) }
        (_elements + index).initialize(to: element)
        _setStamp(stamp, ticket &+ 1)
        _items.signal()
    }

    /// Takes the element of the next receive ticket, with an items unit held; `nil` when the
    /// channel closed before that ticket was sent (the unit goes back).
    @inlinable
    internal func _take() -> Element? {
        // Relaxed: tickets are unique; the element travels through the stamp (file comment).
        let ticket = ilk_atomic_fetch_add_u64(_head, 1, ILK_ORDER_RELAXED)
        _inject(.channelSlotClaimed)
        let index = Int(ticket % UInt64(_capacity))
        let stamp = _stamps + index
        // Acquire: pairs with the sender's release store of ticket + 1.
        if _slowPath(ilk_atomic_load_u64(stamp, ILK_ORDER_ACQUIRE) != ticket &+ 1) {
            if !_awaitElement(stamp, ticket) {
                _items.signal()
                return nil
            }
        }
        let element = (_elements + index).move()
        _setStamp(stamp, ticket &+ UInt64(_capacity))
        _spaces.signal()
        return element
    }

    /// Stores a slot's new stamp, waking the slot's sleepers. Release: publishes the element
    /// (a send) or its move-out (a receive) to the acquire load of the next party. The exchange
    /// reads the latest value, so a sleeper's WAIT set before it is seen (file comment).
    @inlinable @inline(__always)
    internal func _setStamp(_ stamp: UnsafeMutablePointer<UInt64>, _ value: UInt64) {
        if _slowPath(ilk_atomic_exchange_u64(stamp, value, ILK_ORDER_RELEASE) & BoundedChannel._waitBit != 0) {
            _Futex.wakeAll(BoundedChannel._sleepWord(stamp), for: .boundedChannel)
        }
    }

    /// The 32-bit half of a stamp that sleepers wait on: its low half, which every new stamp of
    /// the slot changes.
    @usableFromInline
    internal static func _sleepWord(_ stamp: UnsafeMutablePointer<UInt64>) -> UnsafeMutablePointer<UInt32> {
        #if _endian(little)
        UnsafeMutableRawPointer(stamp).assumingMemoryBound(to: UInt32.self)
        #else
        UnsafeMutableRawPointer(stamp).advanced(by: 4).assumingMemoryBound(to: UInt32.self)
        #endif
    }

    /// Waits for the receiver of the slot's previous ticket to finish moving its element out.
    @usableFromInline @inline(never)
    internal func _awaitStamp(_ stamp: UnsafeMutablePointer<UInt64>, _ ticket: UInt64) {
        _ = _awaitSlot(stamp, ticket, refusedFrom: nil)
    }

    /// Waits for the sender of `ticket` to store its element; `false` when no sender ever will
    /// (the channel closed at or before that ticket).
    @usableFromInline @inline(never)
    internal func _awaitElement(_ stamp: UnsafeMutablePointer<UInt64>, _ ticket: UInt64) -> Bool {
        _awaitSlot(stamp, ticket &+ 1, refusedFrom: ticket)
    }

    /// Waits until the slot's stamp (WAIT aside) is `wanted`: spins, then sleeps on it (file
    /// comment). With `refusedFrom` (a receive's ticket), also gives up when the close refused
    /// that ticket. - Returns: `false` when it gave up.
    internal func _awaitSlot(_ stamp: UnsafeMutablePointer<UInt64>, _ wanted: UInt64, refusedFrom ticket: UInt64?)
        -> Bool
    {
        let waitBit = BoundedChannel._waitBit
        for _ in 0..<BoundedChannel._slotSpins {
            // Acquire: pairs with the release exchange of the awaited store.
            if ilk_atomic_load_u64(stamp, ILK_ORDER_ACQUIRE) & ~waitBit == wanted { return true }
            // Acquire: pairs with close()'s store; tickets from closedAt on are never sent.
            if let ticket, ticket >= ilk_atomic_load_u64(_closedAt, ILK_ORDER_ACQUIRE) { return false }
            ilk_spin_pause()
        }
        while true {
            // Acquire: as above.
            var current = ilk_atomic_load_u64(stamp, ILK_ORDER_ACQUIRE)
            if current & ~waitBit == wanted { return true }
            // Acquire: as above.
            if let ticket, ticket >= ilk_atomic_load_u64(_closedAt, ILK_ORDER_ACQUIRE) { return false }
            if current & waitBit == 0 {
                // Relaxed (both): the bit only asks the storer for a wake; its exchange reads it
                // (one modification order), and the value we wait for is re-read with acquire.
                let found = ilk_atomic_cas_value_u64(
                    stamp, current, current | waitBit, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
                if found != current { continue }
                current |= waitBit
            }
            _ = _Futex.wait(
                BoundedChannel._sleepWord(stamp), expected: UInt32(truncatingIfNeeded: current), for: .boundedChannel)
        }
    }

    /// Pauses a slot's waiter spins before it sleeps: the awaited store is a few instructions
    /// away unless its thread was preempted.
    @usableFromInline static var _slotSpins: Int { 128 }
}
