// OSQueueHead, OSAtomicEnqueue, OSAtomicDequeue: layout as Darwin's, LIFO order, and under
// several producers and consumers every element dequeued exactly once, with threads that
// dequeue and enqueue the same elements again and again (the ABA pattern).

import Foundation
import Interlock
import InterlockCompat
import Testing

/// An element whose link is not at offset 0.
private struct Item {
    var value: Int
    var seen: Int
    var next: UnsafeMutableRawPointer?
    var tail: Int32
}

private let itemLink = MemoryLayout<Item>.offset(of: \.next)!

@Suite("OSQueue")
struct OSQueueTests {
    @Test("OSQueueHead has Darwin's size, alignment and initializers")
    func layout() {
        #expect(MemoryLayout<OSQueueHead>.size == 16)
        #expect(MemoryLayout<OSQueueHead>.alignment == 16)
        let empty = OS_ATOMIC_QUEUE_INIT
        #expect(empty.opaque1 == nil)
        #expect(empty.opaque2 == 0)
        let other = OSQueueHead(opaque1: nil, opaque2: 7)
        #expect(other.opaque2 == 7)
        #expect(itemLink > 0)
    }

    @Test("last in, first out; nil when empty")
    func lifo() {
        let head = UnsafeMutablePointer<OSQueueHead>.allocate(capacity: 1)
        head.initialize(to: OS_ATOMIC_QUEUE_INIT)
        let items = UnsafeMutablePointer<Item>.allocate(capacity: 5)
        defer {
            head.deallocate()
            items.deallocate()
        }
        for index in 0..<5 {
            (items + index).initialize(to: Item(value: index, seen: 0, next: nil, tail: -1))
        }
        #expect(OSAtomicDequeue(head, itemLink) == nil)
        for index in 0..<5 { OSAtomicEnqueue(head, items + index, itemLink) }
        for index in (0..<5).reversed() {
            let element = OSAtomicDequeue(head, itemLink)
            #expect(element == UnsafeMutableRawPointer(items + index))
            #expect(element?.assumingMemoryBound(to: Item.self).pointee.value == index)
            #expect(element?.assumingMemoryBound(to: Item.self).pointee.tail == -1)
        }
        #expect(OSAtomicDequeue(head, itemLink) == nil)
        #expect(head.pointee.opaque1 == nil)
        #expect(head.pointee.opaque2 == 10)  // one generation per change
        // Enqueue after empty works again.
        OSAtomicEnqueue(head, items + 2, itemLink)
        #expect(OSAtomicDequeue(head, itemLink) == UnsafeMutableRawPointer(items + 2))
    }

    @Test("ABA: after A is dequeued, B dequeued and A enqueued again, the head pair differs")
    func generationDefeatsABA() {
        let head = UnsafeMutablePointer<OSQueueHead>.allocate(capacity: 1)
        head.initialize(to: OS_ATOMIC_QUEUE_INIT)
        let items = UnsafeMutablePointer<Item>.allocate(capacity: 3)
        defer {
            head.deallocate()
            items.deallocate()
        }
        for index in 0..<3 { (items + index).initialize(to: Item(value: index, seen: 0, next: nil, tail: 0)) }
        let c = UnsafeMutableRawPointer(items)
        let b = UnsafeMutableRawPointer(items + 1)
        let a = UnsafeMutableRawPointer(items + 2)
        OSAtomicEnqueue(head, c, itemLink)
        OSAtomicEnqueue(head, b, itemLink)
        OSAtomicEnqueue(head, a, itemLink)
        // What a dequeuer reads before it is preempted: (A, g) and A's link B.
        let stale = head.pointee
        #expect(stale.opaque1 == a)
        #expect(items[2].next == b)
        // Meanwhile: A and B dequeued, A enqueued again (its link now C).
        #expect(OSAtomicDequeue(head, itemLink) == a)
        #expect(OSAtomicDequeue(head, itemLink) == b)
        OSAtomicEnqueue(head, a, itemLink)
        // The pointer alone would match (the classic ABA); the pair, which the CAS compares,
        // does not, so the stale dequeuer cannot install B.
        #expect(head.pointee.opaque1 == stale.opaque1)
        #expect(head.pointee.opaque2 != stale.opaque2)
        #expect(OSAtomicDequeue(head, itemLink) == a)
        #expect(OSAtomicDequeue(head, itemLink) == c)
        #expect(OSAtomicDequeue(head, itemLink) == nil)
    }

    @Test("producers and consumers: every element dequeued exactly once")
    func producersAndConsumers() {
        let producers = 4
        let consumers = 4
        let perProducer = 20_000
        let total = producers * perProducer
        let shared = QueueTestPointers(
            head: UnsafeMutablePointer<OSQueueHead>.allocate(capacity: 1),
            elements: UnsafeMutablePointer<Item>.allocate(capacity: total)
        )
        shared.head.initialize(to: OS_ATOMIC_QUEUE_INIT)
        for index in 0..<total {
            (shared.elements + index).initialize(to: Item(value: index, seen: 0, next: nil, tail: 0))
        }
        defer {
            shared.head.deallocate()
            shared.elements.deallocate()
        }
        let consumed = AtomicInt(0)
        runOnQueueTestThreads(producers + consumers) { thread in
            if thread < producers {
                for index in thread * perProducer..<(thread + 1) * perProducer {
                    OSAtomicEnqueue(shared.head, shared.elements + index, itemLink)
                }
            } else {
                while consumed.load() < total {
                    guard let element = OSAtomicDequeue(shared.head, itemLink) else {
                        Thread.sleep(forTimeInterval: 0)
                        continue
                    }
                    // The dequeuer owns the element: a duplicate dequeue would count twice.
                    element.assumingMemoryBound(to: Item.self).pointee.seen += 1
                    consumed.increment()
                }
            }
        }
        #expect(consumed.load() == total)
        #expect(OSAtomicDequeue(shared.head, itemLink) == nil)
        var wrong = 0
        for index in 0..<total where shared.elements[index].seen != 1 { wrong += 1 }
        #expect(wrong == 0)
    }

    @Test("threads dequeue and enqueue the same elements again (ABA): none lost or duplicated")
    func recycling() {
        let threads = 8
        let rounds = 100_000
        let count = 4  // few elements: each address comes back to the head often
        let shared = QueueTestPointers(
            head: UnsafeMutablePointer<OSQueueHead>.allocate(capacity: 1),
            elements: UnsafeMutablePointer<Item>.allocate(capacity: count)
        )
        shared.head.initialize(to: OS_ATOMIC_QUEUE_INIT)
        for index in 0..<count {
            (shared.elements + index).initialize(to: Item(value: index, seen: 0, next: nil, tail: 0))
            OSAtomicEnqueue(shared.head, shared.elements + index, itemLink)
        }
        defer {
            shared.head.deallocate()
            shared.elements.deallocate()
        }
        let misses = AtomicInt(0)
        runOnQueueTestThreads(threads) { _ in
            var held: [UnsafeMutableRawPointer] = []
            for round in 0..<rounds {
                if let element = OSAtomicDequeue(shared.head, itemLink) {
                    element.assumingMemoryBound(to: Item.self).pointee.seen += 1
                    held.append(element)
                } else {
                    misses.increment()
                }
                // Give back one or two at a time, so that the queue's length keeps changing.
                if held.count > 1 || round % 3 == 0, let element = held.popLast() {
                    OSAtomicEnqueue(shared.head, element, itemLink)
                }
            }
            for element in held { OSAtomicEnqueue(shared.head, element, itemLink) }
        }
        var found = Set<Int>()
        var duplicates = 0
        while let element = OSAtomicDequeue(shared.head, itemLink) {
            let value = element.assumingMemoryBound(to: Item.self).pointee.value
            if !found.insert(value).inserted { duplicates += 1 }
            if found.count + duplicates > count { break }  // a cycle: stop
        }
        #expect(duplicates == 0)
        #expect(found == Set(0..<count))
        var dequeues = 0
        for index in 0..<count { dequeues += shared.elements[index].seen }
        #expect(dequeues + misses.load() == threads * rounds)
    }
}
