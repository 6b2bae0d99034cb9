// BoundedChannel in Swift concurrency: tasks suspend (never blocking a pool thread) while full or
// empty, the AsyncSequence drains until close, cancellation leaves nothing behind (a cancelled
// send did not send, a cancelled receive took nothing) including when it races the operation
// that would have served the task, close wakes waiting tasks, and threads and tasks mix on one
// channel.

import Testing

@testable import Interlock

@Suite("BoundedChannel, tasks")
struct BoundedChannelAsyncTests {
    @Test("a task's receive suspends until a send; its send suspends while the channel is full")
    func suspendsWhileEmptyOrFull() async throws {
        let channel = BoundedChannel<Int>(capacity: 1)
        let receiver = Task { try await channel.receive() }
        #expect(await taskEventually { channel._items._queuedSnapshot == 1 }, "the receive did not wait")
        try await channel.send(1)
        #expect(try await receiver.value == 1)

        try await channel.send(2)
        let sender = Task { try await channel.send(3) }
        #expect(await taskEventually { channel._spaces._queuedSnapshot == 1 }, "the send did not wait")
        #expect(try await channel.receive() == 2)
        try await sender.value
        #expect(try await channel.receive() == 3)
    }

    @Test("the AsyncSequence yields every element in order, then ends at close")
    func asyncSequence() async throws {
        let channel = BoundedChannel<Int>(capacity: 4)
        let producer = Task {
            for value in 0..<100 { try await channel.send(value) }
            channel.close()
        }
        var received: [Int] = []
        for try await value in channel { received.append(value) }
        try await producer.value
        #expect(received == Array(0..<100))
    }

    @Test("a cancelled receive took nothing: the element goes to the next receiver")
    func cancelledReceiveTakesNothing() async throws {
        let channel = BoundedChannel<Int>(capacity: 2)
        let receiver = Task { try await channel.receive() }
        #expect(await taskEventually { channel._items._queuedSnapshot == 1 })
        receiver.cancel()
        await #expect(throws: CancellationError.self) { _ = try await receiver.value }
        #expect(channel._items._queuedSnapshot == 0, "the cancelled receive left its record")
        try await channel.send(9)
        #expect(channel.tryReceive() == 9)
    }

    @Test("a cancelled send did not send, and its element is released")
    func cancelledSendSendsNothing() async throws {
        let released = AtomicInt(0)
        let channel = BoundedChannel<Tracked>(capacity: 1)
        try await channel.send(Tracked(0, released: released))
        let sender = Task { try await channel.send(Tracked(1, released: released)) }
        #expect(await taskEventually { channel._spaces._queuedSnapshot == 1 })
        sender.cancel()
        await #expect(throws: CancellationError.self) { try await sender.value }
        #expect(released.load() == 1, "the cancelled send's element was kept")
        #expect(channel.count == 1)
        #expect(channel.tryReceive()?.value == 0)
        #expect(channel.tryReceive() == nil, "the cancelled send's element arrived")
    }

    @Test("cancellation racing a send, many rounds: the receiver gets the element or throws and it stays")
    func cancelRacingSend() async throws {
        let rounds = TestScale.count(3_000, small: 300)
        let channel = BoundedChannel<Int>(capacity: 1)
        var served = 0
        var cancelled = 0
        for round in 0..<rounds {
            let receiver = Task { try await channel.receive() }
            if round % 2 == 0 { #expect(await taskEventually { channel._items._queuedSnapshot == 1 }) }
            async let send: Void = channel.send(round)
            receiver.cancel()
            try await send
            do {
                let value = try await receiver.value
                #expect(value == round)
                served += 1
                #expect(channel.tryReceive() == nil, "the element was delivered and also kept")
            } catch {
                #expect(error is CancellationError)
                cancelled += 1
                #expect(channel.tryReceive() == round, "a cancelled receive took the element")
            }
            #expect(channel._items._queuedSnapshot == 0, "a record was left behind")
        }
        #expect(served + cancelled == rounds)
    }

    @Test("cancellation racing the room a receive makes, many rounds: the send happened or nothing was sent")
    func cancelRacingRoom() async throws {
        let rounds = TestScale.count(3_000, small: 300)
        let channel = BoundedChannel<Int>(capacity: 1)
        for round in 0..<rounds {
            try await channel.send(-1)
            let sender = Task { try await channel.send(round) }
            if round % 2 == 0 { #expect(await taskEventually { channel._spaces._queuedSnapshot == 1 }) }
            #expect(channel.tryReceive() == -1)
            sender.cancel()
            do {
                try await sender.value
                #expect(channel.tryReceive() == round, "a send that returned did not send")
            } catch {
                #expect(error is CancellationError)
                #expect(channel.tryReceive() == nil, "a cancelled send sent")
            }
            #expect(channel._spaces._queuedSnapshot == 0, "a record was left behind")
        }
    }

    @Test("a rendezvous send cancelled while its element waits: either a receiver took it or nobody will")
    func rendezvousCancelRacingClaim() async throws {
        let rounds = TestScale.count(2_000, small: 200)
        let channel = BoundedChannel<Int>(capacity: 0)
        for round in 0..<rounds {
            let sender = Task { try await channel.send(round) }
            #expect(await taskEventually { channel.count == 1 })
            let outcome = Locked<ChannelReceiveResult<Int>?>(nil)
            let receiver = TestThread {
                let result = channel.receive(before: .now + .milliseconds(round % 3 == 0 ? 0 : 5))
                outcome.withLock { $0 = result }
            }
            sender.cancel()
            receiver.join()
            let result = outcome.withLock { $0 }
            do {
                try await sender.value
                guard case .element(round)? = result else {
                    Issue.record("round \(round): the send returned but no receiver took its element")
                    continue
                }
            } catch {
                #expect(error is CancellationError)
                if case .element? = result { Issue.record("round \(round): a cancelled send's element was received") }
            }
            #expect(channel.count == 0)
        }
    }

    @Test("close wakes waiting tasks: receivers end with nil, senders throw ChannelClosedError")
    func closeWakesTasks() async throws {
        let empty = BoundedChannel<Int>(capacity: 1)
        let full = BoundedChannel<Int>(capacity: 1)
        try await full.send(0)
        let receiver = Task { try await empty.receive() }
        let sender = Task { try await full.send(1) }
        #expect(await taskEventually { empty._items._queuedSnapshot == 1 && full._spaces._queuedSnapshot == 1 })
        empty.close()
        full.close()
        #expect(try await receiver.value == nil)
        await #expect(throws: ChannelClosedError.self) { try await sender.value }
        #expect(try await full.receive() == 0)
        #expect(try await full.receive() == nil)
    }

    @Test("threads and tasks send and receive on one channel: every element once, each producer's in order")
    func threadsAndTasksMix() async throws {
        let perProducer = TestScale.count(5_000, small: 500)
        let channel = BoundedChannel<Int>(capacity: 4)
        let seen = Locked<[[Int]]>([])
        let threadProducers = (0..<2).map { producer in
            TestThread { for sequence in 0..<perProducer { try? channel.send(producer * perProducer + sequence) } }
        }
        let threadConsumers = (0..<2).map { _ in
            TestThread {
                var mine: [Int] = []
                while let value = channel.receive() { mine.append(value) }
                seen.withLock { $0.append(mine) }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 2..<4 {
                group.addTask {
                    for sequence in 0..<perProducer { try await channel.send(producer * perProducer + sequence) }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    var mine: [Int] = []
                    for try await value in channel { mine.append(value) }
                    seen.withLock { $0.append(mine) }
                }
            }
            // Close once every producer is done: the threads, and the two producing tasks (the
            // consuming tasks cannot finish before the close, so the first two done are those).
            for thread in threadProducers { thread.join() }
            try await group.next()
            try await group.next()
            channel.close()
            try await group.waitForAll()
        }
        for thread in threadConsumers { thread.join() }
        let lists = seen.withLock { $0 }
        var all = lists.flatMap { $0 }
        all.sort()
        #expect(all == Array(0..<(4 * perProducer)), "an element was lost or duplicated")
        for list in lists {
            var last = [Int](repeating: -1, count: 4)
            for value in list {
                #expect(value > last[value / perProducer], "a producer's elements out of order")
                last[value / perProducer] = value
            }
        }
    }
}
