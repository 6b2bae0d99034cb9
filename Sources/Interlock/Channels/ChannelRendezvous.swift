// BoundedChannel with capacity 0, a rendezvous: a send returns once a receiver has taken its
// element. One slot, owned by one sender at a time, and a word that says what the slot holds.
//
// Slot word (UInt32): bits 0-1 the state, bit 2 CLOSED.
//
//   EMPTY    nothing; the sender that holds a spaces unit may store
//   FULL     a sender's element waits for a receiver
//   CLAIMED  a receiver won the element (CAS FULL -> CLAIMED) and is moving it out
//   TAKEN    moved out; the sender resets the slot to EMPTY and gives its spaces unit back
//   (CLAIMED -> TAKEN and TAKEN -> EMPTY are a fetch_or and a fetch_and: they keep a CLOSED
//   that a close sets at any moment)
//
//   send(e)     spaces.wait() (the slot is this sender's); CLOSED: give it back, throw;
//               store e; CAS EMPTY -> FULL (fails only on CLOSED: take e back, throw);
//               items.signal(); acks.wait(); then finish (below)
//   receive()   items.wait(); CAS FULL -> CLAIMED: move e out, store TAKEN, acks.signal(),
//               return e; CLOSED: give the unit back, return nil; EMPTY, CLAIMED or TAKEN: the
//               unit was stale (below), wait again
//   finish      (the sender, after its ack, or its deadline or cancellation): TAKEN: take
//               the ack if it gave up waiting for it, then reset to EMPTY and give spaces
//               back: sent; CLAIMED: wait for TAKEN; FULL: retract (CAS FULL -> EMPTY,
//               keeping CLOSED), release e, give spaces back: not sent (closed: throw)
//   close()     fetch_or CLOSED (the first time only); endless units to spaces, items and
//               acks, which wakes every waiter
//
// Invariants:
//   - One element at most, stored only by the sender holding the one spaces unit, which it
//     gives back only once the slot is EMPTY again.
//   - The element goes to exactly one party: a receiver by its CAS FULL -> CLAIMED, or back to
//     its sender by the retraction CAS FULL -> EMPTY; the two CASes exclude each other.
//   - A send succeeds exactly when a receiver claimed its element, before any close (a claim
//     expects FULL without CLOSED): "send returns once a receiver took it". After a close, an
//     element still FULL is retracted by its sender, which throws: never delivered.
//   - Stale items units: a sender that retracts leaves the unit it signalled for its element.
//     The receiver that takes it finds no FULL slot (or loses the claim to another) and waits
//     again; stale units only cost wake-ups, and no receiver takes an element without a claim.
//     Every acks unit before a close is a receiver's, after its TAKEN, and its sender waits
//     for it (also when it gave up waiting and then found the element claimed).
//
// Memory ordering: the element is published by the sender's CAS EMPTY -> FULL (release) and
// acquired by the receiver's claim CAS (acquire); the receiver's move-out happens before its
// release store of TAKEN, which the sender loads with acquire before it resets the slot and
// signals spaces (release), so the next sender's store follows the move-out. A retraction CAS
// is acquire (it takes the sender's own element back; nothing to acquire but its own writes,
// kept uniform). The close's fetch_or is acq_rel: it orders against claims and retractions.

import CInterlock

/// The rendezvous slot word's states and bit (see the file comment).
@usableFromInline
internal enum _RendezvousSlot {
    @usableFromInline static var empty: UInt32 { 0 }
    @usableFromInline static var full: UInt32 { 1 }
    @usableFromInline static var claimed: UInt32 { 2 }
    @usableFromInline static var taken: UInt32 { 3 }
    @usableFromInline static var stateMask: UInt32 { 3 }
    @usableFromInline static var closed: UInt32 { 4 }

    /// Whether a slot in state `word` holds an element (a sender's, waiting, or being claimed).
    @inlinable static func holdsElement(_ word: UInt32) -> Bool {
        let state = word & stateMask
        return state == full || state == claimed
    }
}

extension BoundedChannel {
    /// `_rendezvousSend` without a deadline, for send(_:), whose buffered path is inlined.
    // Untimed: an inlined fast path that passed `deadline: nil` would build and destroy an
    // Optional<ContinuousClock.Instant> through its value witnesses on every call, fast path
    // included (ReadWriteLockSlowPaths.swift has the figure).
    @usableFromInline @inline(never)
    internal func _rendezvousSendUntimed(_ element: sending Element) throws(ChannelClosedError) {
        _ = try _rendezvousSend(element, deadline: nil)
    }

    /// `_rendezvousReceive` without a deadline, for receive(), whose buffered path is inlined.
    @usableFromInline @inline(never)
    internal func _rendezvousReceiveUntimed() -> Element? {
        _rendezvousReceive(deadline: nil).receivedElement
    }

    /// A rendezvous send: stores the element for a receiver and waits until one took it, until
    /// `deadline` (then the element is taken back), or until the channel closes.
    @usableFromInline
    internal func _rendezvousSend(_ element: sending Element, deadline: ContinuousClock.Instant?)
        throws(ChannelClosedError) -> Bool
    {
        if let deadline {
            guard _spaces.wait(before: deadline) else {
                if isClosed { throw ChannelClosedError() }
                return false
            }
        } else {
            _spaces.wait()
        }
        try _rendezvousPut(element)
        let acknowledged: Bool
        if let deadline {
            acknowledged = _acks.wait(before: deadline)
        } else {
            _acks.wait()
            acknowledged = true
        }
        guard try _rendezvousSettle(acknowledged: acknowledged) else { return false }
        if !acknowledged { _acks.wait() }  // the claiming receiver's ack, a few instructions away
        _rendezvousRelease()
        return true
    }

    /// A rendezvous trySend: sends only while a receiver waits (committed on `items`), and then
    /// gives that receiver `_trySendPatience` to claim the element before taking it back. The
    /// bound matters in async code: a receiving task that was granted the announcement may not
    /// run before the caller's own thread is free, so an unbounded wait could hold every thread
    /// of the cooperative pool.
    @usableFromInline
    internal func _rendezvousTrySend(_ element: sending Element) throws(ChannelClosedError) -> Bool {
        if isClosed { throw ChannelClosedError() }
        // A negative count: a receiver is committed to wait for an element. Relaxed: a hint; the
        // protocol below decides.
        guard ilk_atomic_load_i64(_items._count, ILK_ORDER_RELAXED) < 0, _spaces.tryWait() else { return false }
        try _rendezvousPut(element)
        let giveUp = ilk_clock_monotonic_ns() &+ BoundedChannel._trySendPatience
        while !_acks.tryWait() {
            if ilk_clock_monotonic_ns() >= giveUp {
                // Take the element back, unless a receiver claimed it meanwhile: then it is
                // moving it out (running), and its ack is a few instructions away.
                guard try _rendezvousSettle(acknowledged: false) else { return false }
                _acks.wait()
                _rendezvousRelease()
                return true
            }
            ilk_thread_yield()
        }
        guard try _rendezvousSettle(acknowledged: true) else { return false }
        _rendezvousRelease()
        return true
    }

    /// How long a rendezvous trySend waits for the waiting receiver to claim its element, in
    /// nanoseconds: a thread's wake-up takes 5-40 us on the 2-core test machine.
    @usableFromInline static var _trySendPatience: Int64 { 1_000_000 }

    /// Stores `element` in the slot this sender owns (it holds the spaces unit) and announces it.
    @usableFromInline
    internal func _rendezvousPut(_ element: sending Element) throws(ChannelClosedError) {
        let word = _slotWord
        // Relaxed: a first look; the CAS below decides.
        if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) & _RendezvousSlot.closed != 0 {
            _spaces.signal()
            throw ChannelClosedError()
        }
        _elements.initialize(to: element)
        // Release: publishes the element to the receiver's claim. Relaxed on failure: the slot
        // is this sender's, so only CLOSED can have changed it.
        if ilk_atomic_cas_value_u32(
            word, _RendezvousSlot.empty, _RendezvousSlot.full, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
            != _RendezvousSlot.empty
        {
            _elements.deinitialize(count: 1)
            _spaces.signal()
            throw ChannelClosedError()
        }
        _inject(.channelRendezvousPut)
        _items.signal()
    }

    /// The sender's end of a rendezvous (the file comment's "finish"), after its ack
    /// (`acknowledged`) or after it gave up waiting for one: waits while a receiver moves the
    /// element out, or takes the element back.
    /// - Returns: `true` when a receiver took the element: the caller then takes the receiver's
    ///   ack if it had given up waiting for it, and only then calls ``_rendezvousRelease()``
    ///   (a spaces unit given back first could let the next sender's receiver ack to us);
    ///   `false` when the element was taken back (released; the slot given back).
    /// - Throws: ``ChannelClosedError`` when it was taken back because the channel closed.
    @usableFromInline
    internal func _rendezvousSettle(acknowledged: Bool) throws(ChannelClosedError) -> Bool {
        let word = _slotWord
        var rounds = 0
        while true {
            // Acquire: pairs with the receiver's release fetch_or to TAKEN (its move-out).
            let current = ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE)
            let closed = current & _RendezvousSlot.closed
            switch current & _RendezvousSlot.stateMask {
            case _RendezvousSlot.taken:
                return true
            case _RendezvousSlot.full:
                if acknowledged && closed == 0 {
                    preconditionFailure("BoundedChannel: internal error, a rendezvous ack without a claim")
                }
                // Acquire on success: the element is ours again. Relaxed on failure: re-read.
                if ilk_atomic_cas_value_u32(
                    word, current, _RendezvousSlot.empty | closed, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == current
                {
                    _elements.deinitialize(count: 1)
                    _spaces.signal()
                    if closed != 0 { throw ChannelClosedError() }
                    return false
                }
            default:
                // CLAIMED: the receiver is moving the element out (a few instructions).
                rounds += 1
                if rounds < 64 { ilk_spin_pause() } else { ilk_thread_yield() }
            }
        }
    }

    /// Empties a TAKEN slot and gives it to the next sender.
    @usableFromInline
    internal func _rendezvousRelease() {
        // Back to EMPTY, keeping a CLOSED that a close may set at any moment. Relaxed: the
        // spaces signal (release) publishes the reset to the next sender.
        _ = ilk_atomic_fetch_and_u32(_slotWord, ~_RendezvousSlot.stateMask, ILK_ORDER_RELAXED)
        _spaces.signal()
    }

    /// A rendezvous receive: waits (until `deadline`, when given) for a sender's element and
    /// claims it; `.closed` once the channel is closed.
    @usableFromInline
    internal func _rendezvousReceive(deadline: ContinuousClock.Instant?) -> ChannelReceiveResult<Element> {
        while true {
            if let deadline {
                guard _items.wait(before: deadline) else { return .timedOut }
            } else {
                _items.wait()
            }
            if let result = _rendezvousClaim() { return result }
        }
    }

    /// With an items unit held: claims the waiting element, or reports the close; `nil` when the
    /// unit was stale (no element to claim: wait again).
    @usableFromInline
    internal func _rendezvousClaim() -> ChannelReceiveResult<Element>? {
        let word = _slotWord
        // Acquire on success: pairs with the sender's release CAS to FULL. Relaxed on failure.
        let found = ilk_atomic_cas_value_u32(
            word, _RendezvousSlot.full, _RendezvousSlot.claimed, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
        if found == _RendezvousSlot.full {
            _inject(.channelSlotClaimed)
            let element = _elements.move()
            // CLAIMED -> TAKEN (2 -> 3), keeping a CLOSED set meanwhile. Release: the move-out
            // happens before the sender's acquire load of TAKEN.
            _ = ilk_atomic_fetch_or_u32(word, 1, ILK_ORDER_RELEASE)
            _acks.signal()
            return .element(element)
        }
        if found & _RendezvousSlot.closed != 0 {
            _items.signal()  // the close's unit goes back: the supply stays endless
            return .closed
        }
        return nil
    }

    /// Closes a rendezvous (the file comment).
    @usableFromInline
    internal func _rendezvousClose() {
        // Acq_rel: one point in the slot word's order against claims and retractions.
        let old = ilk_atomic_fetch_or_u32(_slotWord, _RendezvousSlot.closed, ILK_ORDER_ACQ_REL)
        if old & _RendezvousSlot.closed != 0 { return }
        // Release: isClosed's snapshot. No ticket was ever sent on a rendezvous.
        ilk_atomic_store_u64(_closedAt, 0, ILK_ORDER_RELEASE)
        _spaces._signal(units: BoundedChannel._closeUnits)
        _items._signal(units: BoundedChannel._closeUnits)
        _acks._signal(units: BoundedChannel._closeUnits)
    }
}
