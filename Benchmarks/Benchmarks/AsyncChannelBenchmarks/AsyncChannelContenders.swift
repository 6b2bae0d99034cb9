// The contenders of the task-side channel benchmarks: Interlock's BoundedChannel (async send and
// receive); a hand-written bounded channel on a Synchronization.Mutex, a Deque and checked
// continuations (what a Swift user writes, without cancellation); swift-async-algorithms'
// AsyncChannel (a rendezvous: every send waits for its receiver, whatever the row's capacity);
// and AsyncStream with an unbounded buffer (one consumer only, and producers never wait: no
// backpressure). Only the Mutex + Deque channel offers BoundedChannel's guarantees short of
// cancellation; the others are what users reach for, and are listed as they are.

import AsyncAlgorithms
import DequeModule
import Interlock
import Synchronization

/// A channel of Ints for tasks, as each peer spells it: producers and consumers in bulk.
protocol AsyncChannelContender: AnyObject, Sendable {
    static var contenderName: String { get }
    /// Whether several tasks may consume at once.
    static var offersManyConsumers: Bool { get }
    init(capacity: Int)
    /// Sends every value of `values`, in order.
    func produce(_ values: ClosedRange<Int>) async
    /// Receives `count` values; returns their sum.
    func consume(_ count: Int) async -> Int
}

final class InterlockAsyncChannel: AsyncChannelContender, @unchecked Sendable {
    static var contenderName: String { "Interlock BoundedChannel" }
    static var offersManyConsumers: Bool { true }
    let channel: BoundedChannel<Int>
    init(capacity: Int) { channel = BoundedChannel(capacity: capacity) }
    func produce(_ values: ClosedRange<Int>) async {
        for value in values {
            do { try await channel.send(value) } catch { preconditionFailure("AsyncChannelBenchmarks: \(error)") }
        }
    }
    func consume(_ count: Int) async -> Int {
        var sum = 0
        for _ in 0..<count {
            do { sum &+= try await channel.receive()! } catch {
                preconditionFailure("AsyncChannelBenchmarks: \(error)")
            }
        }
        return sum
    }
}

/// A bounded channel written by hand: a Mutex around a Deque of elements and FIFO queues of
/// waiting senders and receivers (checked continuations); no cancellation.
final class MutexDequeChannel: AsyncChannelContender, @unchecked Sendable {
    static var contenderName: String { "Mutex + Deque + continuations" }
    static var offersManyConsumers: Bool { true }
    struct State {
        var buffer = Deque<Int>()
        var senders = Deque<(value: Int, continuation: CheckedContinuation<Void, Never>)>()
        var receivers = Deque<CheckedContinuation<Int, Never>>()
    }
    let state = Mutex(State())
    let capacity: Int
    init(capacity: Int) { self.capacity = capacity }

    /// Under the lock: hands `value` to a waiting receiver, or buffers it; false when full.
    private static func offer(_ value: Int, _ state: inout State, capacity: Int) -> (
        handled: Bool, receiver: CheckedContinuation<Int, Never>?
    ) {
        if let receiver = state.receivers.popFirst() { return (true, receiver) }
        if state.buffer.count < capacity {
            state.buffer.append(value)
            return (true, nil)
        }
        return (false, nil)
    }

    /// Under the lock: the next value, and the sender whose value moved into the buffer (or was
    /// taken directly); nil when nothing is there.
    private static func take(_ state: inout State) -> (value: Int, sender: CheckedContinuation<Void, Never>?)? {
        if let value = state.buffer.popFirst() {
            if let sender = state.senders.popFirst() {
                state.buffer.append(sender.value)
                return (value, sender.continuation)
            }
            return (value, nil)
        }
        if let sender = state.senders.popFirst() { return (sender.value, sender.continuation) }
        return nil
    }

    func send(_ value: Int) async {
        let capacity = capacity
        let first = state.withLock { Self.offer(value, &$0, capacity: capacity) }
        if first.handled {
            first.receiver?.resume(returning: value)
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let again = state.withLock { state in
                let offered = Self.offer(value, &state, capacity: capacity)
                if !offered.handled { state.senders.append((value, continuation)) }
                return offered
            }
            if again.handled {
                again.receiver?.resume(returning: value)
                continuation.resume()
            }
        }
    }

    func receive() async -> Int {
        if let got = state.withLock({ Self.take(&$0) }) {
            got.sender?.resume()
            return got.value
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let got = state.withLock { state in
                let taken = Self.take(&state)
                if taken == nil { state.receivers.append(continuation) }
                return taken
            }
            if let got {
                got.sender?.resume()
                continuation.resume(returning: got.value)
            }
        }
    }

    func produce(_ values: ClosedRange<Int>) async {
        for value in values { await send(value) }
    }
    func consume(_ count: Int) async -> Int {
        var sum = 0
        for _ in 0..<count { sum &+= await receive() }
        return sum
    }
}

final class AsyncAlgorithmsChannel: AsyncChannelContender, @unchecked Sendable {
    static var contenderName: String { "AsyncAlgorithms AsyncChannel (rendezvous)" }
    static var offersManyConsumers: Bool { true }
    let channel = AsyncChannel<Int>()
    init(capacity: Int) {}
    func produce(_ values: ClosedRange<Int>) async {
        for value in values { await channel.send(value) }
    }
    func consume(_ count: Int) async -> Int {
        var iterator = channel.makeAsyncIterator()
        var sum = 0
        for _ in 0..<count { sum &+= await iterator.next()! }
        return sum
    }
}

final class UnboundedAsyncStream: AsyncChannelContender, @unchecked Sendable {
    static var contenderName: String { "AsyncStream, unbounded (one consumer)" }
    static var offersManyConsumers: Bool { false }
    let stream: AsyncStream<Int>
    let continuation: AsyncStream<Int>.Continuation
    init(capacity: Int) { (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded) }
    func produce(_ values: ClosedRange<Int>) async {
        for value in values { continuation.yield(value) }
    }
    func consume(_ count: Int) async -> Int {
        var iterator = stream.makeAsyncIterator()
        var sum = 0
        for _ in 0..<count { sum &+= await iterator.next()! }
        return sum
    }
}
