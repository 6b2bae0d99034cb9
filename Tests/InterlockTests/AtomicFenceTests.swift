// Fences: memoryBarrier, atomicFence with every ordering and compilerBarrier compile and run;
// and message passing through a release store and an acquire load, the pairing every lock in
// Interlock relies on. The payload is plain (non-atomic) memory, so ThreadSanitizer reports a
// race if the release/acquire pair did not order it.

import Interlock
import Testing

/// A plain Int shared between threads; only the release/acquire protocol makes access safe.
private final class PlainBox: @unchecked Sendable {
    var value = 0
}

@Suite("Fences and release/acquire message passing")
struct AtomicFenceTests {
    @Test("memoryBarrier, atomicFence(_:) and compilerBarrier run and keep program order",
          arguments: allOrders)
    func fencesRun(order: MemoryOrder) {
        let a = AtomicInt(0)
        a.store(1, ordering: .relaxed)
        memoryBarrier()
        #expect(a.load(ordering: .relaxed) == 1)
        a.store(2, ordering: .relaxed)
        atomicFence(order)
        #expect(a.load(ordering: .relaxed) == 2)
        a.store(3, ordering: .relaxed)
        compilerBarrier()
        #expect(a.load(ordering: .relaxed) == 3)
    }

    @Test("writer: data relaxed, flag release; reader: flag acquire, then sees the data")
    func messagePassing() {
        let rounds = TestScale.count(2_000, small: 200)
        for round in 1...rounds {
            let data = AtomicInt(0)
            let plain = PlainBox()
            let flag = AtomicBool(false)
            let seen = AtomicInt(-1)
            runConcurrently(threadCount: 2) { index in
                if index == 0 {
                    plain.value = round
                    data.store(round, ordering: .relaxed)  // published by the release below
                    flag.store(true, ordering: .release)   // pairs with the reader's acquire load
                } else {
                    spinUntil { flag.load(ordering: .acquire) }  // pairs with the writer's release
                    let payload = data.load(ordering: .relaxed)
                    seen.store(payload == plain.value ? payload : -2, ordering: .relaxed)
                }
            }
            #expect(seen.load() == round, "round \(round): the reader saw the data the flag published")
            if seen.load() != round { break }
        }
    }

    @Test("message passing through an integer counter: release add, acquire load")
    func messagePassingThroughCounter() {
        let rounds = TestScale.count(1_000, small: 100)
        let plain = PlainBox()
        let ready = AtomicInt32(0)
        let mismatches = AtomicInt(0)
        runConcurrently(threadCount: 2) { index in
            for round in 1...rounds {
                if index == 0 {
                    spinUntil { ready.load(ordering: .acquire) == Int32(2 * round - 2) }  // consumer's release
                    plain.value = round
                    ready.add(1, ordering: .release)  // publishes plain.value to the consumer
                } else {
                    spinUntil { ready.load(ordering: .acquire) == Int32(2 * round - 1) }  // producer's release
                    if plain.value != round { mismatches.increment(ordering: .relaxed) }
                    ready.increment(ordering: .release)  // hands plain back to the producer
                }
            }
        }
        #expect(mismatches.load() == 0)
        #expect(ready.load() == Int32(2 * rounds))
        #expect(plain.value == rounds)
    }
}
