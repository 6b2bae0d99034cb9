// OSQueueHead, OSAtomicEnqueue, OSAtomicDequeue: layout as Darwin's, LIFO order, and under
// several producers and consumers every element dequeued exactly once, with threads that
// dequeue and enqueue the same elements again and again (the ABA pattern). The double-width
// compare-and-swap under them (ilk_dwcas, and its striped-lock form ilk_dwcas_locked) directly:
// a stale pair fails and hands back the current one, the words land in the right halves, and
// the locked form from several threads loses no update and never hands back a torn pair.

import CInterlock
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

    /// Proves that ilk_dwcas stores new_lo in opaque1 and new_hi in opaque2 (not swapped); then
    /// that the generation makes a preempted dequeuer's CAS fail after A was dequeued, B dequeued
    /// and A enqueued again (the pointer alone would match), and that the failure hands back the
    /// current pair (A, g+3).
    @Test("ABA, at the CAS: a dequeuer's stale (A, g) fails and gets the current (A, g+3) back")
    func staleDoubleWidthCASFails() throws {
        let head = UnsafeMutablePointer<OSQueueHead>.allocate(capacity: 1)
        head.initialize(to: OS_ATOMIC_QUEUE_INIT)
        let items = UnsafeMutablePointer<Item>.allocate(capacity: 2)
        defer {
            head.deallocate()
            items.deallocate()
        }
        for index in 0..<2 { (items + index).initialize(to: Item(value: index, seen: 0, next: nil, tail: 0)) }
        let b = UnsafeMutableRawPointer(items)
        let a = UnsafeMutableRawPointer(items + 1)
        // The words' places, on the empty head: (nil, 0) -> (B, 7), then back to (nil, 0). With
        // them swapped the queue below would follow a generation as a pointer: stop there.
        var lo: UInt = 0
        var hi: UInt = 0
        #expect(ilk_dwcas(head, &lo, &hi, UInt(bitPattern: b), 7))
        let placed = head.pointee.opaque1 == b && head.pointee.opaque2 == 7
        try #require(placed, "new_lo must land in opaque1 (first word), new_hi in opaque2 (second word)")
        #expect(ilk_dwcas(head, &lo, &hi, 0, 0) == false, "(0, 0) is stale now")
        #expect(lo == UInt(bitPattern: b) && hi == 7, "the failed CAS hands back the pair")
        #expect(ilk_dwcas(head, &lo, &hi, 0, 0))
        #expect(head.pointee.opaque1 == nil && head.pointee.opaque2 == 0)
        OSAtomicEnqueue(head, b, itemLink)
        OSAtomicEnqueue(head, a, itemLink)
        // What OSAtomicDequeue would do if preempted between its reads and its CAS, replayed
        // with the same double-width CAS it calls: it reads (A, g) and A's link B.
        let staleLo = UInt(bitPattern: head.pointee.opaque1)
        let staleHi = UInt(bitPattern: head.pointee.opaque2)
        #expect(staleLo == UInt(bitPattern: a))
        #expect(items[1].next == b)
        // Meanwhile three operations: A dequeued, B dequeued, A enqueued again (link nil now).
        #expect(OSAtomicDequeue(head, itemLink) == a)
        #expect(OSAtomicDequeue(head, itemLink) == b)
        OSAtomicEnqueue(head, a, itemLink)
        // The dequeuer's CAS (A, g) -> (B, g+1): the pointer matches, the generation does not.
        lo = staleLo
        hi = staleHi
        let swapped = ilk_dwcas(head, &lo, &hi, UInt(bitPattern: b), staleHi &+ 1)
        #expect(!swapped, "a stale generation must make the CAS fail")
        #expect(lo == UInt(bitPattern: a), "the failed CAS hands back the current pointer")
        #expect(hi == staleHi &+ 3, "the failed CAS hands back the current generation")
        #expect(head.pointee.opaque1 == a && head.pointee.opaque2 == Int(bitPattern: staleHi &+ 3))
        // Retried with the pair handed back, the CAS succeeds.
        let newHi = hi &+ 1
        #expect(ilk_dwcas(head, &lo, &hi, UInt(bitPattern: b), newHi))
        #expect(head.pointee.opaque1 == b && UInt(bitPattern: head.pointee.opaque2) == newHi)
        // The queue is consistent: B (whose link is still nil) is its only element.
        #expect(OSAtomicDequeue(head, itemLink) == b)
        #expect(OSAtomicDequeue(head, itemLink) == nil)
        #expect(UInt(bitPattern: head.pointee.opaque2) == newHi &+ 1)
    }

    /// Proves the striped-lock form's contract: it swaps only when both words match, writes
    /// nothing and hands back the pair found when either differs, and puts each new word in its
    /// own half.
    @Test("ilk_dwcas_locked: swaps only on a match of both words; a failure hands back the pair")
    func lockedDoubleWidthCAS() {
        let pair = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
            .bindMemory(to: UInt.self, capacity: 2)
        defer { pair.deallocate() }
        pair[0] = 5
        pair[1] = 9
        var lo: UInt = 5
        var hi: UInt = 8
        #expect(!ilk_dwcas_locked(pair, &lo, &hi, 6, 10), "second word differs")
        #expect(lo == 5 && hi == 9, "the failed CAS hands back the pair found")
        #expect(pair[0] == 5 && pair[1] == 9, "a failed CAS writes nothing")
        lo = 4
        hi = 9
        #expect(!ilk_dwcas_locked(pair, &lo, &hi, 6, 10), "first word differs")
        #expect(lo == 5 && hi == 9)
        #expect(pair[0] == 5 && pair[1] == 9)
        #expect(ilk_dwcas_locked(pair, &lo, &hi, 6, 10), "both words match")
        #expect(pair[0] == 6 && pair[1] == 10, "new_lo in the first word, new_hi in the second")
        #expect(lo == 5 && hi == 9, "a successful CAS leaves the expected pair alone")
        // The old pair is stale now: it fails and hands back the new one.
        #expect(!ilk_dwcas_locked(pair, &lo, &hi, 7, 11))
        #expect(lo == 6 && hi == 10)
    }

    /// Proves that the striped-lock form is atomic under contention: 4 threads each add 1 to
    /// both words 200,000 times through it, the words end at the total (no lost update), and no
    /// failed CAS ever hands back a pair whose words differ (no torn read).
    @Test("ilk_dwcas_locked from 4 threads: no lost update, never a torn pair handed back")
    func lockedDoubleWidthCASConcurrent() {
        let threads = 4
        let perThread = 200_000
        let pair = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
            .bindMemory(to: UInt.self, capacity: 2)
        pair.initialize(repeating: 0, count: 2)
        defer { pair.deallocate() }
        nonisolated(unsafe) let shared = pair
        let failures = AtomicInt(0)
        let torn = AtomicInt(0)
        let gaveUp = AtomicInt(0)
        // Only a hang reaches it: a CAS that never hands back the current pair retries forever.
        let deadline = ContinuousClock.now + .seconds(60)
        compatRunThreads(threads) { _ in
            // Each thread adds 1 to both words perThread times, starting from the guess (0, 0)
            // and retrying with the pair a failed CAS hands back.
            var lo: UInt = 0
            var hi: UInt = 0
            var done = 0
            var failed = 0
            var tornSeen = 0
            while done < perThread {
                if ilk_dwcas_locked(shared, &lo, &hi, lo &+ 1, hi &+ 1) {
                    done += 1
                    lo &+= 1
                    hi &+= 1
                } else {
                    failed += 1
                    if lo != hi { tornSeen += 1 }  // the words always change together
                    if failed % 4_096 == 0 && ContinuousClock.now >= deadline {
                        _ = gaveUp.increment()
                        break
                    }
                }
            }
            _ = failures.add(failed)
            _ = torn.add(tornSeen)
        }
        #expect(gaveUp.load() == 0, "a thread kept failing: the CAS does not hand back the current pair")
        let total = UInt(threads * perThread)
        #expect(pair[0] == total, "first word: one increment per successful CAS")
        #expect(pair[1] == total, "second word: one increment per successful CAS")
        #expect(torn.load() == 0, "a failed CAS handed back a pair whose words differ")
        // At least the three threads whose first guess (0, 0) lost went through the failure path.
        #expect(failures.load() >= threads - 1, "the failure path ran")
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

    /// Proves that a head aligned to 8 bytes but not 16 (where `lock cmpxchg16b` would fault
    /// with no message) traps in OSAtomicEnqueue with a message naming it and the 16 bytes.
    @Test("OSAtomicEnqueue on a head aligned to 8 but not 16 bytes traps, naming the function")
    func misalignedHeadEnqueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let raw = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
            raw.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
            let head = (raw + 8).assumingMemoryBound(to: OSQueueHead.self)
            OSAtomicEnqueue(head, raw + 32, 0)
        }
        compatExpectStderr(result, contains: "OSAtomicEnqueue: the address 0x")
        compatExpectStderr(result, contains: "is not aligned to 16 bytes")
    }

    /// Proves the same check in OSAtomicDequeue, even on an empty queue (which, unchecked,
    /// would return nil without ever reaching the double-width CAS).
    @Test("OSAtomicDequeue on a head aligned to 8 but not 16 bytes traps, naming the function")
    func misalignedHeadDequeueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let raw = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
            raw.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
            let head = (raw + 8).assumingMemoryBound(to: OSQueueHead.self)
            _ = OSAtomicDequeue(head, 0)
        }
        compatExpectStderr(result, contains: "OSAtomicDequeue: the address 0x")
        compatExpectStderr(result, contains: "is not aligned to 16 bytes")
    }
    /// Proves that the striped form of the double-width CAS (ThreadSanitizer builds, CPUs
    /// without CMPXCHG16B) installs the RCU fork handlers, which hold its stripes across
    /// fork(), in a process that never creates a LockFreeStack (OSAtomicEnqueue alone): before,
    /// a stripe held by another thread at a fork stayed held in the child for good.
    @Test("the striped double-width CAS installs the fork handlers that hold its stripes across fork()")
    func stripedFormInstallsForkHandlers() async {
        await #expect(processExitsWith: .success) {
            // A fresh process: nothing has installed them yet.
            guard !ilk_rcu_fork_handlers_installed() else { exit(2) }
            let words = UnsafeMutablePointer<UInt>.allocate(capacity: 4)
            let pair = UnsafeMutablePointer<UInt>(bitPattern: (UInt(bitPattern: words) + 15) & ~15)!
            pair.initialize(repeating: 0, count: 2)
            var lo: UInt = 0
            var hi: UInt = 0
            guard ilk_dwcas_locked(pair, &lo, &hi, 1, 2), pair[0] == 1, pair[1] == 2 else { exit(3) }
            exit(ilk_rcu_fork_handlers_installed() ? 0 : 4)
        }
    }
}
