// BoundedChannel with threads: every promise of the thread API — FIFO, the capacity bound,
// blocking while full or empty, the deadline forms, the try forms, close (drain then nil, sends
// refused, waiters woken, elements of refused sends released), many producers and consumers
// (conservation and per-producer order), elements released once received or at deinit, and the
// misuse trap.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

/// An element that counts its deinitializations, to check what the channel keeps alive.
final class Tracked: Sendable {
    let value: Int
    let released: AtomicInt
    init(_ value: Int, released: AtomicInt) {
        self.value = value
        self.released = released
    }
    deinit { _ = released.increment(ordering: .relaxed) }  // Relaxed: a count, read after joins.
}

@Suite("BoundedChannel, threads")
struct BoundedChannelTests {
    @Test("elements come out in the order they went in; try forms report full and empty")
    func fifoAndTryForms() throws {
        let channel = BoundedChannel<Int>(capacity: 4)
        #expect(channel.capacity == 4)
        #expect(channel.count == 0)
        #expect(channel.tryReceive() == nil)
        for value in 0..<4 { #expect(try channel.trySend(value)) }
        #expect(channel.count == 4)
        #expect(try !channel.trySend(99), "a full channel takes no more")
        #expect(channel.receive() == 0)
        #expect(try channel.trySend(4), "one receive makes room for one send")
        var received: [Int] = []
        while let value = channel.tryReceive() { received.append(value) }
        #expect(received == [1, 2, 3, 4])
        #expect(channel.count == 0)
        #expect(!channel.isClosed)
    }

    @Test("the ring wraps around many times and keeps the order")
    func wrapsAround() throws {
        let channel = BoundedChannel<Int>(capacity: 3)
        var next = 0
        var expected = 0
        for round in 0..<1_000 {
            for _ in 0..<(round % 3 + 1) {
                try channel.send(next)
                next += 1
            }
            while let value = channel.tryReceive() {
                #expect(value == expected)
                expected += 1
            }
        }
        #expect(expected == next)
    }

    @Test("a sender on a full channel sleeps until a receive makes room")
    func senderWaitsWhileFull() throws {
        let channel = BoundedChannel<Int>(capacity: 1)
        try channel.send(1)
        let sent = AtomicBool(false)
        let sender = TestThread {
            try? channel.send(2)
            sent.store(true)
        }
        #expect(lockEventually { channel._spaces._queuedSnapshot == 1 }, "the sender never waited")
        #expect(!sent.load())
        #expect(channel.receive() == 1)
        sender.join()
        #expect(sent.load())
        #expect(channel.receive() == 2)
    }

    @Test("a receiver on an empty channel sleeps until a send")
    func receiverWaitsWhileEmpty() {
        let channel = BoundedChannel<Int>(capacity: 2)
        let received = Locked<Int?>(nil)
        let receiver = TestThread {
            let value = channel.receive()  // not under the lock: the test reads it meanwhile
            received.withLock { $0 = value }
        }
        #expect(lockEventually { channel._items._queuedSnapshot == 1 }, "the receiver never waited")
        #expect(received.withLock { $0 } == nil)
        _ = try? channel.trySend(7)
        receiver.join()
        #expect(received.withLock { $0 } == 7)
    }

    @Test("send(before:) on a full channel returns false at the deadline; its element is released, not sent")
    func timedSendTimesOut() throws {
        let released = AtomicInt(0)
        let channel = BoundedChannel<Tracked>(capacity: 1)
        try channel.send(Tracked(0, released: released))
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(50)
        #expect(try !channel.send(Tracked(1, released: released), before: deadline))
        #expect(ContinuousClock.now >= deadline, "returned before its deadline")
        #expect(released.load() == 1, "the refused element was kept")
        #expect(channel.count == 1)
        #expect(channel._spaces._queuedSnapshot == 0, "the timed-out sender left its record")
        #expect(channel.receive()?.value == 0)
        #expect(channel.tryReceive() == nil)
        #expect(try channel.send(Tracked(2, released: released), before: .now + .seconds(30)))
    }

    @Test("receive(before:): timedOut when empty, the element when one comes, closed once closed and drained")
    func timedReceive() throws {
        let channel = BoundedChannel<Int>(capacity: 2)
        let deadline = ContinuousClock.now + .milliseconds(50)
        guard case .timedOut = channel.receive(before: deadline) else {
            Issue.record("an empty channel should time out")
            return
        }
        #expect(ContinuousClock.now >= deadline)
        #expect(channel._items._queuedSnapshot == 0, "the timed-out receiver left its record")
        try channel.send(5)
        guard case .element(5) = channel.receive(before: .now + .seconds(30)) else {
            Issue.record("the buffered element should be received")
            return
        }
        try channel.send(6)
        channel.close()
        guard case .element(6) = channel.receive(before: .now + .seconds(30)) else {
            Issue.record("an element sent before close should still be received")
            return
        }
        guard case .closed = channel.receive(before: .now + .seconds(30)) else {
            Issue.record("a closed, drained channel should say so")
            return
        }
        guard case .closed = channel.receive(before: .now - .seconds(1)) else {
            Issue.record("a passed deadline on a closed, drained channel should still say closed")
            return
        }
    }

    @Test("close: what was sent before is drained, then nil; sends after it throw and release their element")
    func closeDrainsThenRefuses() throws {
        let released = AtomicInt(0)
        let channel = BoundedChannel<Tracked>(capacity: 4)
        for value in 0..<3 { try channel.send(Tracked(value, released: released)) }
        channel.close()
        channel.close()  // idempotent
        #expect(channel.isClosed)
        #expect(throws: ChannelClosedError.self) { try channel.send(Tracked(10, released: released)) }
        #expect(throws: ChannelClosedError.self) { try channel.trySend(Tracked(11, released: released)) }
        #expect(throws: ChannelClosedError.self) {
            try channel.send(Tracked(12, released: released), before: .now + .seconds(30))
        }
        #expect(released.load() == 3, "the refused elements were kept")
        #expect(channel.receive()?.value == 0)
        #expect(channel.receive()?.value == 1)
        #expect(channel.tryReceive()?.value == 2)
        #expect(channel.receive() == nil)
        #expect(channel.receive() == nil, "nil again: the close lets every later receive through")
        #expect(channel.tryReceive() == nil)
        #expect(released.load() == 6)
    }

    @Test("close wakes every waiting receiver with nil and every waiting sender with ChannelClosedError")
    func closeWakesWaiters() throws {
        let released = AtomicInt(0)
        let empty = BoundedChannel<Tracked>(capacity: 2)
        let full = BoundedChannel<Tracked>(capacity: 1)
        try full.send(Tracked(0, released: released))
        let nils = AtomicInt(0)
        let refused = AtomicInt(0)
        let receivers = (0..<3).map { _ in
            TestThread { if empty.receive() == nil { _ = nils.increment() } }
        }
        let senders = (0..<3).map { value in
            TestThread {
                do {
                    try full.send(Tracked(value + 1, released: released))
                } catch {
                    _ = refused.increment()
                }
            }
        }
        #expect(lockEventually { empty._items._queuedSnapshot == 3 && full._spaces._queuedSnapshot == 3 })
        empty.close()
        full.close()
        for thread in receivers + senders { thread.join() }
        #expect(nils.load() == 3)
        #expect(refused.load() == 3)
        #expect(released.load() == 3, "the refused senders' elements were kept")
        #expect(full.receive()?.value == 0, "the element sent before the close is still there")
        #expect(full.receive() == nil)
    }

    @Test("many producers and consumers: every element received once, each producer's in order")
    func manyProducersAndConsumers() {
        let producers = 4
        let consumers = 4
        let perProducer = TestScale.count(20_000, small: 2_000)
        let channel = BoundedChannel<Int>(capacity: 8)
        let seen = Locked<[[Int]]>([])
        let producing = (0..<producers).map { producer in
            TestThread {
                for sequence in 0..<perProducer { try? channel.send(producer * perProducer + sequence) }
            }
        }
        let consuming = (0..<consumers).map { _ in
            TestThread {
                var mine: [Int] = []
                while let value = channel.receive() { mine.append(value) }
                seen.withLock { $0.append(mine) }
            }
        }
        for thread in producing { thread.join() }
        channel.close()
        for thread in consuming { thread.join() }
        let lists = seen.withLock { $0 }
        #expect(lists.count == consumers)
        var all = lists.flatMap { $0 }
        all.sort()
        #expect(all == Array(0..<(producers * perProducer)), "an element was lost or duplicated")
        for list in lists {
            var last = [Int](repeating: -1, count: producers)
            for value in list {
                let producer = value / perProducer
                #expect(value > last[producer], "producer \(producer)'s elements out of order")
                last[producer] = value
            }
        }
    }

    @Test("never more than capacity elements are buffered while producers outrun the consumer")
    func capacityBound() {
        let capacity = 3
        let channel = BoundedChannel<Int>(capacity: capacity)
        let sends = TestScale.count(20_000, small: 2_000)
        let producers = (0..<3).map { _ in TestThread { for value in 0..<sends { try? channel.send(value) } } }
        var received = 0
        var largest = 0
        while received < 3 * sends {
            largest = Swift.max(largest, channel.count)
            if channel.receive() != nil { received += 1 }
        }
        for thread in producers { thread.join() }
        #expect(largest <= capacity)
        #expect(channel.count == 0)
    }

    @Test("the channel keeps no element alive once received, and releases what it holds at deinit")
    func releasesElements() throws {
        let released = AtomicInt(0)
        do {
            let channel = BoundedChannel<Tracked>(capacity: 4)
            for value in 0..<4 { try channel.send(Tracked(value, released: released)) }
            _ = channel.receive()
            #expect(released.load() == 1, "a received element the caller dropped is still alive")
            _ = channel.receive()
            try channel.send(Tracked(4, released: released))
        }
        #expect(released.load() == 5, "the channel's deinit left buffered elements alive")
        do {
            let channel = BoundedChannel<Tracked>(capacity: 2)
            try channel.send(Tracked(0, released: released))
            channel.close()
        }
        #expect(released.load() == 6, "a closed channel's deinit left its element alive")
    }

    @Test("a thread waiting on a slot whose store is late sleeps on its stamp and is woken by the store")
    func slotWaiterSleepsAndIsWoken() {
        // White box: the wait of a receive whose sender took its ticket and was preempted before
        // storing (BoundedChannel.swift, "A slot's wait"), on a fresh slot 0 (stamp 0: free for
        // ticket 0); the store of ticket 0's element would make it 1.
        let channel = BoundedChannel<Int>(capacity: 2)
        let stamp = channel._stamps
        let tid = AtomicInt(0)
        let returned = AtomicBool(false)
        let waiter = TestThread {
            tid.store(Int(ilk_current_thread_id()))
            let stored = channel._awaitElement(channel._stamps, 0)
            returned.store(stored)
        }
        #expect(
            lockEventually {
                tid.load() != 0 && threadState(Int32(tid.load())) == "S"
                    && ilk_atomic_load_u64(stamp, ILK_ORDER_RELAXED) & BoundedChannel<Int>._waitBit != 0
            }, "the waiter never slept on the stamp")
        #expect(!returned.load())
        channel._setStamp(stamp, 1)
        waiter.join()
        #expect(returned.load(), "the waiter gave up instead of taking the element")
        #expect(ilk_atomic_load_u64(stamp, ILK_ORDER_RELAXED) == 1, "the store left the WAIT bit")
        channel._setStamp(stamp, 0)  // back to free, as the deinit expects nothing buffered
    }

    @Test("BoundedChannel(capacity:) with a negative capacity traps with a message")
    func negativeCapacityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = BoundedChannel<Int>(capacity: -1)
        }
        expectTrapMessage(result, contains: "BoundedChannel", "init(capacity:) with a negative capacity (-1)")
    }
}
