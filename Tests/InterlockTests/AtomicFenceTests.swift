// Fences: store buffering (Dekker), which only a full fence forbids, through memoryBarrier and
// atomicFence(.sequentiallyConsistent), with an unfenced control; and message passing through a release store and an acquire load, the pairing every lock in
// Interlock relies on. The payload is plain (non-atomic) memory, so ThreadSanitizer reports a
// race if the release/acquire pair did not order it.

import CInterlock
import Interlock
import Testing

/// The full fences under test.
enum FullFence: String, CustomStringConvertible, Sendable {
    case memoryBarrier, seqCstFence
    var description: String { rawValue }
}

/// Runs `rounds` store-buffering rounds on two threads with `fence` between each thread's store
/// and load. - Returns: how many rounds read 0 on both threads.
private func storeBufferingRounds(_ rounds: Int, fence: @escaping @Sendable () -> Void) -> Int {
    // Fresh words every round (no reset between rounds); x and y in different allocations.
    nonisolated(unsafe) let x = UnsafeMutablePointer<UInt32>.allocate(capacity: rounds)
    nonisolated(unsafe) let y = UnsafeMutablePointer<UInt32>.allocate(capacity: rounds)
    nonisolated(unsafe) let seen = UnsafeMutablePointer<UInt32>.allocate(capacity: 2 * rounds)
    x.initialize(repeating: 0, count: rounds)
    y.initialize(repeating: 0, count: rounds)
    seen.initialize(repeating: 0, count: 2 * rounds)
    defer { x.deallocate(); y.deallocate(); seen.deallocate() }
    let arrived = AtomicInt(0)
    runConcurrently(threadCount: 2) { index in
        let (mine, theirs) = index == 0 ? (x, y) : (y, x)
        for round in 0..<rounds {
            // A counter barrier per round, so both threads start the round together.
            _ = arrived.increment(ordering: .acquireRelease)
            while arrived.load(ordering: .acquire) < 2 * (round + 1) { ilk_spin_pause() }
            // Relaxed: the accesses under test; only `fence` orders them.
            ilk_atomic_store_u32(mine + round, 1, ILK_ORDER_RELAXED)
            fence()
            seen[2 * round + index] = ilk_atomic_load_u32(theirs + round, ILK_ORDER_RELAXED)
        }
    }
    return (0..<rounds).reduce(0) { $0 + (seen[2 * $1] == 0 && seen[2 * $1 + 1] == 0 ? 1 : 0) }
}

/// A plain Int shared between threads; only the release/acquire protocol makes access safe.
private final class PlainBox: @unchecked Sendable {
    var value = 0
}

@Suite("Fences and release/acquire message passing")
struct AtomicFenceTests {
    /// Store buffering (Dekker): thread 0 stores x then loads y, thread 1 stores y then loads
    /// x, all relaxed. Without a full fence between each store and load a CPU may let the load
    /// pass the store (x86-64 does: the store waits in the store buffer), so both may read 0;
    /// `memoryBarrier()` and `atomicFence(.sequentiallyConsistent)` forbid it. A fence that
    /// compiled to nothing would let both read 0 within a few thousand rounds on x86-64 (the
    /// unfenced control below counts how often it happens here).
    @Test(
        "a full fence between a store and a load forbids store buffering (both threads reading 0)",
        arguments: [FullFence.memoryBarrier, .seqCstFence])
    func storeBuffering(fence: FullFence) {
        let rounds = TestScale.count(50_000, small: 5_000)
        let bothZero = storeBufferingRounds(rounds) {
            switch fence {
            case .memoryBarrier: memoryBarrier()
            case .seqCstFence: atomicFence(.sequentiallyConsistent)
            }
        }
        #expect(bothZero == 0, "\(bothZero) of \(rounds) rounds read 0 on both threads through \(fence)")
    }

    /// The control: with only a compiler barrier the outcome is allowed, and the count is
    /// recorded (not asserted: whether it shows depends on the CPU and the scheduling).
    @Test("control: without a fence store buffering is allowed (the count is only recorded)")
    func storeBufferingControl() {
        let rounds = TestScale.count(50_000, small: 5_000)
        let bothZero = storeBufferingRounds(rounds) { compilerBarrier() }
        #expect(bothZero >= 0 && bothZero <= rounds)
        print("AtomicFenceTests: without a fence, \(bothZero) of \(rounds) rounds read 0 on both threads")
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
                    flag.store(true, ordering: .release)  // pairs with the reader's acquire load
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
