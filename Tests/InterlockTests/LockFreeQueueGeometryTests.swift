// LockFreeQueue's algorithm (`_QueueCore`) with test geometries: segments of one, two and four
// slots, where a few operations link new segments, move head and tail across them and retire
// the old ones (with 1024-slot segments, only long runs do); and the crossings under many
// threads: each element exactly once, each producer's in order. The linearizability rounds
// with two-slot segments are in Linearizability/LockFreeLinearizabilityTests.swift.

import CInterlock
import Testing

@testable import Interlock

/// Segments of one slot: every enqueue after the first links a segment.
enum OneSlotSegments: _QueueGeometry {
    static func slotCount(slotStride: Int) -> Int { 1 }
}

/// Segments of two slots.
enum TwoSlotSegments: _QueueGeometry {
    static func slotCount(slotStride: Int) -> Int { 2 }
}

/// Segments of four slots.
enum FourSlotSegments: _QueueGeometry {
    static func slotCount(slotStride: Int) -> Int { 4 }
}

/// The queue's code over the segments of `Geometry`, as a container the tests and the
/// linearizability harness can share between threads (what `LockFreeQueue` is for the
/// standard geometry).
final class SegmentedQueue<Geometry: _QueueGeometry>: ContainerUnderTest, @unchecked Sendable {
    // SAFETY (@unchecked): the core is one immutable pointer to words that only atomics touch.
    let core = _QueueCore<Int, Geometry>()

    init() {}
    deinit { core.destroy() }

    func insert(_ value: Int) { core.enqueue(value) }
    func remove() -> Int? { core.dequeue() }
    var isEmpty: Bool { core.isEmpty }

    /// The segment head designates now.
    var headSegment: UnsafeMutableRawPointer {
        // Acquire: as the queue's own loads of head.
        ilk_atomic_load_ptr(core._words.first, ILK_ORDER_ACQUIRE)!
    }

    /// Segments from head to tail inclusive, following `next`; only while no other thread
    /// uses the queue.
    var linkedSegments: Int {
        var count = 0
        var block: UnsafeMutableRawPointer? = headSegment
        while let current = block {
            count += 1
            // Acquire: as the queue's own loads of next.
            block = ilk_atomic_load_ptr(_QueueCore<Int, Geometry>._Segment(current).next, ILK_ORDER_ACQUIRE)
        }
        return count
    }
}

@Suite("LockFreeQueue with segments of a few slots")
struct LockFreeQueueGeometryTests {
    @Test("the test geometries give the slot counts they name")
    func geometries() {
        #expect(_QueueSegment<Int, OneSlotSegments>.slotCount == 1)
        #expect(_QueueSegment<Int, TwoSlotSegments>.slotCount == 2)
        #expect(_QueueSegment<Int, FourSlotSegments>.slotCount == 4)
        #expect(_QueueSegment<Int, _StandardQueueGeometry>.slotCount == 1024)
    }

    @Test("one thread: segments are linked, head moves on, FIFO order and isEmpty hold throughout")
    func sequentialCrossings() {
        func check<Geometry: _QueueGeometry>(_: Geometry.Type, sourceLocation: SourceLocation = #_sourceLocation) {
            let slots = _QueueSegment<Int, Geometry>.slotCount
            let queue = SegmentedQueue<Geometry>()
            let first = queue.headSegment
            #expect(queue.isEmpty, sourceLocation: sourceLocation)
            let count = 10 * slots + 1
            for value in 0..<count { queue.insert(value) }
            // Ten full segments and one holding the last element.
            #expect(queue.linkedSegments == 11, sourceLocation: sourceLocation)
            #expect(!queue.isEmpty, sourceLocation: sourceLocation)
            var out: [Int] = []
            while let value = queue.remove() { out.append(value) }
            #expect(out == Array(0..<count), sourceLocation: sourceLocation)
            // Head left (and retired) the first ten segments: only the last one is left.
            #expect(queue.headSegment != first, sourceLocation: sourceLocation)
            #expect(queue.linkedSegments == 1, sourceLocation: sourceLocation)
            #expect(queue.isEmpty, sourceLocation: sourceLocation)
            // Interleaved bursts, checked against a model, across many segment boundaries.
            var model: [Int] = []
            var modelHead = 0
            var next = count
            for round in 0..<(200 * slots) {
                if (round / (3 * slots + 1)) % 2 == 0 ? round % 3 != 2 : round % 3 == 2 {
                    queue.insert(next)
                    model.append(next)
                    next += 1
                } else {
                    let expected: Int? = modelHead < model.count ? model[modelHead] : nil
                    if expected != nil { modelHead += 1 }
                    let got = queue.remove()
                    #expect(got == expected, sourceLocation: sourceLocation)
                    if got != expected { return }
                }
                #expect(queue.isEmpty == (modelHead == model.count), sourceLocation: sourceLocation)
            }
        }
        check(OneSlotSegments.self)
        check(TwoSlotSegments.self)
        check(FourSlotSegments.self)
    }

    @Test("elements left in tiny segments are released at deinit")
    func releasesElements() {
        let counter = LiveCounter()
        do {
            let core = _QueueCore<TrackedElement, TwoSlotSegments>()
            for value in 0..<101 { core.enqueue(TrackedElement(value, counter)) }
            for value in 0..<40 { #expect(core.dequeue()?.value == value) }
            #expect(counter.live.load() == 61)
            core.destroy()
        }
        #expect(counter.created.load() == 101)
        #expect(counter.live.load() == 0)
    }

    @Test(
        "4 producers + 4 consumers over tiny segments: each element once, each producer's in order",
        arguments: [1, 2, 4])
    func manyThreads(slots: Int) {
        switch slots {
        case 1: checkManyThreads(OneSlotSegments.self)
        case 2: checkManyThreads(TwoSlotSegments.self)
        default: checkManyThreads(FourSlotSegments.self)
        }
    }

    /// Producers enqueue their own increasing sequence; consumers dequeue until every element
    /// was received. Afterwards: per consumer, each producer's values increase; all values
    /// together are each value exactly once; the queue is empty and has one segment left.
    private func checkManyThreads<Geometry: _QueueGeometry & SendableMetatype>(_: Geometry.Type) {
        let producers = 4, consumers = 4
        let perProducer = TestScale.count(50_000, small: 2_000)
        let total = producers * perProducer
        let queue = SegmentedQueue<Geometry>()
        let received = AtomicInt(0)
        let results = PerThreadResults<[Int]>(count: consumers, initial: [])
        runConcurrently(threadCount: producers + consumers) { index in
            if index < producers {
                for i in 0..<perProducer { queue.insert(index * perProducer + i) }
            } else {
                var mine: [Int] = []
                // Relaxed: only a stop condition; the elements are synchronized by the queue.
                while received.load(ordering: .relaxed) < total {
                    if let value = queue.remove() {
                        mine.append(value)
                        received.increment(ordering: .relaxed)
                    }
                }
                results[index - producers] = mine
            }
        }
        for (consumer, mine) in results.all.enumerated() {
            var last = Array(repeating: -1, count: producers)
            var inOrder = true
            for value in mine {
                let producer = value / perProducer
                if value <= last[producer] { inOrder = false }
                last[producer] = value
            }
            #expect(inOrder, "consumer \(consumer) saw a producer's elements out of order")
        }
        var seen = [Int](repeating: 0, count: total)
        for value in results.all.joined() where value >= 0 && value < total { seen[value] += 1 }
        let wrong = seen.indices.filter { seen[$0] != 1 }
        #expect(
            wrong.isEmpty,
            "\(wrong.count) values not seen exactly once, first \(wrong.prefix(5).map { "\($0): \(seen[$0])x" })")
        #expect(results.all.joined().count == total)
        #expect(queue.isEmpty)
        #expect(queue.remove() == nil)
        #expect(queue.linkedSegments == 1, "head should have caught up with tail")
    }
}
