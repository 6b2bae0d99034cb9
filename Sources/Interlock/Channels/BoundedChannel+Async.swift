// BoundedChannel in Swift concurrency: tasks wait on the same two semaphores as threads (the
// semaphores' task waiters: a continuation in the same FIFO, never a blocked thread), so the
// channel's protocol is BoundedChannel.swift's and ChannelRendezvous.swift's unchanged.
//
// Cancellation: a task's only suspension points are its semaphore waits (and, on a rendezvous,
// the wait for the receiver's ack). A send cancelled while waiting for room has taken no ticket
// and stored nothing; a receive cancelled while waiting has taken no unit, so the element stays
// for the next receiver (Semaphore+Async.swift: a unit that a racing signal meant for it is
// passed on). A rendezvous send cancelled while its element waits takes it back, unless a
// receiver claimed it first, in which case the send completes (one outcome per waiter). Once a
// call holds its unit it finishes without suspending, so cancellation cannot cut it in half.

extension BoundedChannel {
    /// Sends `element`, suspending the task while the channel is full (a rendezvous: until a
    /// receiver took it).
    ///
    /// - Throws: ``ChannelClosedError`` when the channel is closed before the element is sent;
    ///   `CancellationError` when the task is cancelled while it waits. Either way the element was
    ///   not sent, and is released.
    @inlinable
    public func send(_ element: sending Element) async throws {
        if _capacity == 0 {
            try await _rendezvousSendAsync(element)
            return
        }
        try await _spaces.wait()
        try _store(element)
    }

    /// Receives the oldest element, suspending the task while the channel is empty.
    ///
    /// - Returns: The element; `nil` once the channel is closed and every element sent before the
    ///   close has been received.
    /// - Throws: `CancellationError` when the task is cancelled while it waits; it took nothing,
    ///   and the element it would have got goes to the next receiver.
    @inlinable
    public func receive() async throws -> Element? {
        if _capacity == 0 { return try await _rendezvousReceiveAsync() }
        try await _items.wait()
        return _take()
    }

    /// A rendezvous send in a task (ChannelRendezvous.swift, with the ack awaited).
    @usableFromInline
    internal func _rendezvousSendAsync(_ element: sending Element) async throws {
        try await _spaces.wait()
        try _rendezvousPut(element)
        // A receiving task resumed by the announcement often runs on this very thread once this
        // task yields, and acknowledges at once: then no cancellable wait is set up at all.
        var acknowledged = _acks.tryWait()
        if !acknowledged {
            await Task.yield()
            acknowledged = _acks.tryWait()
        }
        if !acknowledged {
            do {
                try await _acks.wait()
                acknowledged = true
            } catch {
                acknowledged = false  // cancelled: take the element back unless a receiver claimed it
            }
        }
        guard try _rendezvousSettle(acknowledged: acknowledged) else { throw CancellationError() }
        if !acknowledged {
            // The claiming receiver's ack, a few instructions away; this task is cancelled, so
            // poll instead of a wait that would throw at once.
            while !_acks.tryWait() { await Task.yield() }
        }
        _rendezvousRelease()
    }

    /// A rendezvous receive in a task.
    @usableFromInline
    internal func _rendezvousReceiveAsync() async throws -> Element? {
        while true {
            try await _items.wait()
            if let result = _rendezvousClaim() { return result.receivedElement }
        }
    }
}

extension BoundedChannel: AsyncSequence {
    /// Receives the channel's elements in a task until it is closed and drained. Any number of
    /// iterators may run at once: each element goes to exactly one of them.
    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline internal let channel: BoundedChannel

        @usableFromInline internal init(channel: BoundedChannel) { self.channel = channel }

        /// The next element; `nil` once the channel is closed and drained.
        /// - Throws: `CancellationError` when the task is cancelled while it waits (nothing was
        ///   taken).
        @inlinable
        public mutating func next() async throws -> Element? {
            try await channel.receive()
        }
    }

    /// An iterator that receives from this channel.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(channel: self)
    }
}
