// BoundedChannel with capacity 0, a rendezvous, with threads: a send returns only once a receiver
// took its element; the try forms need a partner already waiting; a send that times out takes
// its element back (no receiver ever gets it); close refuses a waiting sender's element and
// wakes receivers with nil; many pairs pass every element exactly once.

import Testing

@testable import Interlock

@Suite("BoundedChannel, rendezvous")
struct BoundedChannelRendezvousTests {
    @Test("send returns only once a receiver has taken the element")
    func sendWaitsForReceiver() {
        let channel = BoundedChannel<Int>(capacity: 0)
        #expect(channel.capacity == 0)
        let returned = AtomicBool(false)
        let sender = TestThread {
            try? channel.send(42)
            returned.store(true)
        }
        // The element waits in the slot and the sender sleeps for its acknowledgement.
        #expect(lockEventually { channel._acks._queuedSnapshot == 1 }, "the sender never waited for a receiver")
        #expect(channel.count == 1)
        #expect(!returned.load())
        #expect(channel.receive() == 42)
        sender.join()
        #expect(returned.load())
        #expect(channel.count == 0)
    }

    @Test("a receiver waits for a sender; the try forms need a partner already waiting")
    func tryForms() throws {
        let released = AtomicInt(0)
        let channel = BoundedChannel<Tracked>(capacity: 0)
        #expect(try !channel.trySend(Tracked(0, released: released)), "no receiver waits")
        #expect(released.load() == 1, "the refused element was kept")
        #expect(channel.tryReceive() == nil, "no sender waits")
        let received = Locked<Int?>(nil)
        let receiver = TestThread {
            let value = channel.receive()?.value  // not under the lock: the test reads it meanwhile
            received.withLock { $0 = value }
        }
        #expect(lockEventually { channel._items._queuedSnapshot == 1 })
        // A receiver waits, so a trySend succeeds, unless the receiver's wake-up takes longer
        // than trySend's patience (a loaded machine): then it is taken back and tried again.
        var attempts = 0
        let sent = lockEventually {
            attempts += 1
            return (try? channel.trySend(Tracked(1, released: released))) == true
        }
        #expect(sent, "trySend never succeeded while a receiver waited")
        receiver.join()
        #expect(received.withLock { $0 } == 1)
        let sender = TestThread { try? channel.send(Tracked(2, released: released)) }
        #expect(lockEventually { channel._acks._queuedSnapshot == 1 })
        #expect(channel.tryReceive()?.value == 2)
        sender.join()
        #expect(released.load() == 2 + attempts, "an element was kept or released twice")
    }

    @Test("a send that times out takes its element back: no later receiver gets it")
    func timedSendRetracts() throws {
        let released = AtomicInt(0)
        let channel = BoundedChannel<Tracked>(capacity: 0)
        let deadline = ContinuousClock.now + .milliseconds(50)
        #expect(try !channel.send(Tracked(7, released: released), before: deadline))
        #expect(ContinuousClock.now >= deadline)
        #expect(released.load() == 1, "the retracted element was kept")
        #expect(channel.count == 0)
        guard case .timedOut = channel.receive(before: .now + .milliseconds(50)) else {
            Issue.record("a retracted element must not be received")
            return
        }
        // The channel still works: the stale announcement costs a wake-up, not an element.
        let sender = TestThread { try? channel.send(Tracked(8, released: released)) }
        guard case .element(let element) = channel.receive(before: .now + .seconds(30)) else {
            Issue.record("the next send should be received")
            sender.join()
            return
        }
        #expect(element.value == 8)
        sender.join()
    }

    @Test("close refuses a waiting sender's element and wakes receivers with nil")
    func closeRefusesWaitingSender() throws {
        let released = AtomicInt(0)
        let channel = BoundedChannel<Tracked>(capacity: 0)
        let refused = AtomicBool(false)
        let sender = TestThread {
            do { try channel.send(Tracked(1, released: released)) } catch { refused.store(true) }
        }
        #expect(lockEventually { channel._acks._queuedSnapshot == 1 })
        channel.close()
        sender.join()
        #expect(refused.load(), "a sender waiting at the close must throw")
        #expect(released.load() == 1, "its element was kept")
        #expect(channel.receive() == nil, "its element must not be delivered")
        #expect(throws: ChannelClosedError.self) { try channel.send(Tracked(2, released: released)) }
        #expect(channel.isClosed)

        let other = BoundedChannel<Int>(capacity: 0)
        let nils = AtomicInt(0)
        let receivers = (0..<3).map { _ in TestThread { if other.receive() == nil { _ = nils.increment() } } }
        #expect(lockEventually { other._items._queuedSnapshot == 3 })
        other.close()
        for thread in receivers { thread.join() }
        #expect(nils.load() == 3)
    }

    @Test("pairs of threads pass every element exactly once, timed sends racing receives")
    func manyPairs() {
        let channel = BoundedChannel<Int>(capacity: 0)
        let perSender = TestScale.count(3_000, small: 500)
        let delivered = Locked<[Int]>([])
        let confirmed = Locked<[Int]>([])
        let senders = (0..<2).map { sender in
            TestThread {
                var mine: [Int] = []
                for sequence in 0..<perSender {
                    let value = sender * perSender + sequence
                    // Short deadlines: many sends give up and retract, racing the receivers' claims.
                    if (try? channel.send(value, before: .now + .microseconds(sequence % 7 * 20))) == true {
                        mine.append(value)
                    }
                }
                confirmed.withLock { $0 += mine }
            }
        }
        let receivers = (0..<2).map { _ in
            TestThread {
                var mine: [Int] = []
                while let value = channel.receive() { mine.append(value) }
                delivered.withLock { $0 += mine }
            }
        }
        for thread in senders { thread.join() }
        channel.close()
        for thread in receivers { thread.join() }
        let got = delivered.withLock { $0 }.sorted()
        let sent = confirmed.withLock { $0 }.sorted()
        #expect(got == sent, "delivered elements differ from the sends that returned true")
        #expect(Set(got).count == got.count, "an element was delivered twice")
    }
}
