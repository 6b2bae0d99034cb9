// OSFifoQueueHead, OSAtomicFifoEnqueue, OSAtomicFifoDequeue: layout as Darwin's, FIFO order,
// with several producers and consumers nothing lost or duplicated and each producer's
// elements seen by every consumer in the order they were enqueued, and the head's lock word
// (opaque3) driven by hand to prove the sleep path: an enqueuer finding it held marks it
// contended, sleeps in the kernel, and is woken by the unlock.

import CInterlock
import Foundation
import Interlock
import InterlockCompat
import Testing

/// An element whose link is not at offset 0.
private struct Message {
    var producer: Int
    var sequence: Int
    var next: UnsafeMutableRawPointer?
    var seen: Int
}

private let messageLink = MemoryLayout<Message>.offset(of: \.next)!

@Suite("OSFifoQueue")
struct OSFifoQueueTests {
    @Test("OSFifoQueueHead has Darwin's alignment and initializers")
    func layout() {
        #expect(MemoryLayout<OSFifoQueueHead>.alignment == 16)
        #expect(MemoryLayout<OSFifoQueueHead>.size >= 2 * MemoryLayout<UnsafeMutableRawPointer>.size + 4)
        let empty = OS_ATOMIC_FIFO_QUEUE_INIT
        #expect(empty.opaque1 == nil && empty.opaque2 == nil && empty.opaque3 == 0)
        let other = OSFifoQueueHead(opaque1: nil, opaque2: nil, opaque3: 0)
        #expect(other.opaque3 == 0)
        #expect(messageLink > 0)
    }

    @Test("first in, first out; nil when empty; usable again after emptied")
    func fifo() {
        let head = UnsafeMutablePointer<OSFifoQueueHead>.allocate(capacity: 1)
        head.initialize(to: OS_ATOMIC_FIFO_QUEUE_INIT)
        let messages = UnsafeMutablePointer<Message>.allocate(capacity: 5)
        defer {
            head.deallocate()
            messages.deallocate()
        }
        for index in 0..<5 {
            (messages + index).initialize(to: Message(producer: 0, sequence: index, next: nil, seen: 0))
        }
        #expect(OSAtomicFifoDequeue(head, messageLink) == nil)
        for round in 0..<2 {
            for index in 0..<5 { OSAtomicFifoEnqueue(head, messages + index, messageLink) }
            for index in 0..<5 {
                let element = OSAtomicFifoDequeue(head, messageLink)
                #expect(element == UnsafeMutableRawPointer(messages + index), "round \(round)")
            }
            #expect(OSAtomicFifoDequeue(head, messageLink) == nil)
            #expect(head.pointee.opaque1 == nil && head.pointee.opaque2 == nil)
        }
        // Interleaved.
        OSAtomicFifoEnqueue(head, messages, messageLink)
        OSAtomicFifoEnqueue(head, messages + 1, messageLink)
        #expect(OSAtomicFifoDequeue(head, messageLink) == UnsafeMutableRawPointer(messages))
        OSAtomicFifoEnqueue(head, messages + 2, messageLink)
        #expect(OSAtomicFifoDequeue(head, messageLink) == UnsafeMutableRawPointer(messages + 1))
        #expect(OSAtomicFifoDequeue(head, messageLink) == UnsafeMutableRawPointer(messages + 2))
        #expect(OSAtomicFifoDequeue(head, messageLink) == nil)
        #expect(head.pointee.opaque3 == 0)  // the lock word is free again
    }

    /// Proves the lock's sleep path end to end: with the word held (1) by this thread, an
    /// enqueuer marks it contended (2) and sleeps in the kernel (seen in /proc); the release
    /// the unlock does (exchange 0, wake one when it was 2) wakes it, and it completes.
    @Test("the lock word: an enqueuer finding it held marks it 2, sleeps, and the unlock wakes it")
    func enqueuerSleepsOnHeldLock() {
        let head = UnsafeMutablePointer<OSFifoQueueHead>.allocate(capacity: 1)
        head.initialize(to: OS_ATOMIC_FIFO_QUEUE_INIT)
        let message = UnsafeMutablePointer<Message>.allocate(capacity: 1)
        message.initialize(to: Message(producer: 0, sequence: 0, next: nil, seen: 0))
        defer {
            head.deallocate()
            message.deallocate()
        }
        let word = (UnsafeMutableRawPointer(head) + MemoryLayout<OSFifoQueueHead>.offset(of: \.opaque3)!)
            .assumingMemoryBound(to: UInt32.self)
        // Take the lock as the enqueue does: 0 -> 1.
        var expected: UInt32 = 0
        #expect(ilk_atomic_cas_strong_u32(word, &expected, 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED))
        let shared = QueueTestPointers(head: head, elements: message)
        let enqueuerID = AtomicUInt32(0)
        let finished = CompatFlag()
        let enqueuer = CompatTestThread {
            enqueuerID.store(ilk_current_thread_id())
            OSAtomicFifoEnqueue(shared.head, shared.elements, messageLink)
            finished.raise()
        }
        let tid = compatPublishedThreadID(enqueuerID)
        #expect(tid != 0, "the enqueuer published its thread id")
        // Only the enqueuer writes 2, just before its futex wait: the word read first, then the
        // enqueuer asleep in the kernel ("S"), means it sleeps in that wait.
        let asleep = compatPoll {
            ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) == 2 && compatThreadState(tid) == "S"
        }
        #expect(asleep, "the enqueuer marked the word contended (2) and went to sleep in the kernel")
        #expect(!finished.isRaised && head.pointee.opaque1 == nil, "nothing enqueued while the lock is held")
        // Release as the unlock does.
        let old = ilk_atomic_exchange_u32(word, 0, ILK_ORDER_RELEASE)
        #expect(old == 2)
        if old == 2 { _ = ilk_futex_wake(word, 1) }
        let woken = finished.wait(seconds: 60)
        #expect(woken, "the wake-up let the enqueuer take the lock and finish")
        if !woken { _ = ilk_futex_wake(word, .max) }  // so that the join below returns
        enqueuer.join()
        #expect(head.pointee.opaque1 == UnsafeMutableRawPointer(message))
        #expect(head.pointee.opaque2 == UnsafeMutableRawPointer(message))
        #expect(ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) == 0, "the enqueuer's unlock freed the word")
        #expect(OSAtomicFifoDequeue(head, messageLink) == UnsafeMutableRawPointer(message))
        #expect(OSAtomicFifoDequeue(head, messageLink) == nil)
    }

    @Test("producers and consumers: nothing lost or duplicated, each producer's order kept")
    func producersAndConsumers() {
        let producers = 4
        let consumers = 3
        let perProducer = 20_000
        let total = producers * perProducer
        let shared = QueueTestPointers(
            head: UnsafeMutablePointer<OSFifoQueueHead>.allocate(capacity: 1),
            elements: UnsafeMutablePointer<Message>.allocate(capacity: total)
        )
        shared.head.initialize(to: OS_ATOMIC_FIFO_QUEUE_INIT)
        for producer in 0..<producers {
            for sequence in 0..<perProducer {
                (shared.elements + producer * perProducer + sequence).initialize(
                    to: Message(producer: producer, sequence: sequence, next: nil, seen: 0))
            }
        }
        defer {
            shared.head.deallocate()
            shared.elements.deallocate()
        }
        let consumed = AtomicInt(0)
        let outOfOrder = AtomicInt(0)
        runOnQueueTestThreads(producers + consumers) { thread in
            if thread < producers {
                for sequence in 0..<perProducer {
                    OSAtomicFifoEnqueue(shared.head, shared.elements + thread * perProducer + sequence, messageLink)
                }
            } else {
                var last = [Int](repeating: -1, count: producers)
                while consumed.load() < total {
                    guard let element = OSAtomicFifoDequeue(shared.head, messageLink) else {
                        Thread.sleep(forTimeInterval: 0)
                        continue
                    }
                    let message = element.assumingMemoryBound(to: Message.self)
                    message.pointee.seen += 1
                    // FIFO: this consumer sees each producer's sequence numbers increase.
                    if message.pointee.sequence <= last[message.pointee.producer] { outOfOrder.increment() }
                    last[message.pointee.producer] = message.pointee.sequence
                    consumed.increment()
                }
            }
        }
        #expect(consumed.load() == total)
        #expect(outOfOrder.load() == 0)
        #expect(OSAtomicFifoDequeue(shared.head, messageLink) == nil)
        var wrong = 0
        for index in 0..<total where shared.elements[index].seen != 1 { wrong += 1 }
        #expect(wrong == 0)
        #expect(shared.head.pointee.opaque3 == 0)
    }

    @Test("one producer, one consumer: the exact order")
    func exactOrder() {
        let count = 50_000
        let shared = QueueTestPointers(
            head: UnsafeMutablePointer<OSFifoQueueHead>.allocate(capacity: 1),
            elements: UnsafeMutablePointer<Message>.allocate(capacity: count)
        )
        shared.head.initialize(to: OS_ATOMIC_FIFO_QUEUE_INIT)
        for index in 0..<count {
            (shared.elements + index).initialize(to: Message(producer: 0, sequence: index, next: nil, seen: 0))
        }
        defer {
            shared.head.deallocate()
            shared.elements.deallocate()
        }
        let mismatches = AtomicInt(0)
        runOnQueueTestThreads(2) { thread in
            if thread == 0 {
                for index in 0..<count { OSAtomicFifoEnqueue(shared.head, shared.elements + index, messageLink) }
            } else {
                var expected = 0
                while expected < count {
                    guard let element = OSAtomicFifoDequeue(shared.head, messageLink) else { continue }
                    if element.assumingMemoryBound(to: Message.self).pointee.sequence != expected {
                        mismatches.increment()
                    }
                    expected += 1
                }
            }
        }
        #expect(mismatches.load() == 0)
    }
}
