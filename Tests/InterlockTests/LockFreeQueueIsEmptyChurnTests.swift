// LockFreeQueue.isEmpty while dequeuers keep claiming slots: the case where one attempt after
// another fails (I6 in LockFreeQueue.swift). isEmpty used to give up after 64 failed attempts
// and answer by the index rule, which counts slots claimed by stalled enqueuers as elements.

import CInterlock
import Testing

@testable import Interlock

/// Segments of 2^18 slots (4 MiB of `Int` slots): room for every stalled claim of the test, so
/// that the dequeue index stays in the first segment.
enum ChurnSegments: _QueueGeometry {
    static func slotCount(slotStride: Int) -> Int { 1 << 18 }
}

/// Segments of 2^16 slots, for the same test under ThreadSanitizer (slower claims and loads).
enum SanitizedChurnSegments: _QueueGeometry {
    static func slotCount(slotStride: Int) -> Int { 1 << 16 }
}

@Suite("LockFreeQueue.isEmpty under churn")
struct LockFreeQueueIsEmptyChurnTests {
    /// Enqueuers claim slots and stall before filling them (made by hand, as in LockFreeQueueTests'
    /// I6 test: the claims of enqueuers preempted between their fetch-and-add and their CAS); a
    /// "staller" keeps about `window` such claims ahead of the dequeue index, and four threads
    /// dequeue, poisoning the claimed slots one by one. An attempt of isEmpty reads the
    /// `window` claimed slots, which takes milliseconds in a debug build, and the dequeuers
    /// claim slots meanwhile: attempt after attempt fails, and the old fallback (after 64)
    /// answered `false`: 4 of 4 runs here before the fix, 1 to 3 false answers each.
    ///
    /// In this history every insert is still in flight and every remove returns nil, the last
    /// one begun after every isEmpty call returned. An isEmpty answering `false` would need a
    /// stalled insert linearized before it, which no remove then took out, so the last remove
    /// could not return nil: only `true` is linearizable.
    @Test("while dequeuers poison the slots of stalled enqueuers, isEmpty answers true, never false")
    func isEmptyWhileDequeuersPoisonStalledClaims() {
        let outcome =
            TestScale.isThreadSanitized
            ? poisonStalledClaims(SanitizedChurnSegments.self, window: 4_000)
            : poisonStalledClaims(ChurnSegments.self, window: 20_000)
        #expect(
            outcome.falseAnswers == 0,
            "isEmpty answered false \(outcome.falseAnswers) times of \(outcome.calls) with no element in the queue")
        #expect(outcome.elements == 0, "a dequeue returned an element nobody enqueued")
        #expect(outcome.finalRemoveWasNil, "a remove after the isEmpty calls found an element")
        #expect(outcome.calls > 0)
    }

    private struct Outcome {
        var calls = 0
        var falseAnswers = 0
        var elements = 0
        var finalRemoveWasNil = true
    }

    /// One observer calls isEmpty until the churn is over; one staller claims slots (never
    /// filled) until all but 1024 slots of the segment are claimed, keeping at most about
    /// `window` ahead of the dequeue index; `dequeuers` threads dequeue until the staller is done
    /// and the dequeue index has passed every claim. Then one more dequeue on this thread.
    private func poisonStalledClaims<Geometry: _QueueGeometry & SendableMetatype>(
        _: Geometry.Type, window: UInt64, dequeuers: Int = 4
    ) -> Outcome {
        let queue = SegmentedQueue<Geometry>()
        // The 1024 slots left over: the dequeue index passes the last claim by at most one per
        // dequeuer, so it never reaches slotCount and the segment stays head throughout.
        let total = UInt64(_QueueSegment<Int, Geometry>.slotCount - 1024)
        let segment = _QueueSegment<Int, Geometry>(queue.headSegment)
        let enqueueIndex = UnsafeSendablePointer(segment.enqueueIndex)
        let dequeueIndex = UnsafeSendablePointer(segment.dequeueIndex)
        let calls = AtomicInt(0), falseAnswers = AtomicInt(0), elements = AtomicInt(0)
        let stallerDone = AtomicBool(false)
        @Sendable func churnIsOver() -> Bool {
            // Seq_cst: as the queue's own loads of the index.
            stallerDone.load() && ilk_atomic_load_u64(dequeueIndex.pointer, ILK_ORDER_SEQ_CST) >= total
        }
        runConcurrently(threadCount: dequeuers + 2) { index in
            switch index {
            case 0:
                repeat {
                    if !queue.isEmpty { falseAnswers.increment() }
                    calls.increment()
                } while !churnIsOver()
            case 1:
                var claimed: UInt64 = 0
                while claimed < total {
                    // Seq_cst: as the queue's own loads and claims of the indices.
                    let lead =
                        ilk_atomic_load_u64(enqueueIndex.pointer, ILK_ORDER_SEQ_CST)
                        &- ilk_atomic_load_u64(dequeueIndex.pointer, ILK_ORDER_SEQ_CST)
                    guard lead < window else {
                        ilk_thread_yield()
                        continue
                    }
                    // Each claim is one enqueuer's, stalled before it fills its slot.
                    for _ in 0..<Swift.min(window / 4, total - claimed) {
                        _ = ilk_atomic_fetch_add_u64(enqueueIndex.pointer, 1, ILK_ORDER_SEQ_CST)
                        claimed += 1
                    }
                }
                stallerDone.store(true)
            default:
                repeat {
                    if queue.remove() != nil { elements.increment() }
                } while !churnIsOver()
            }
        }
        return Outcome(
            calls: calls.load(), falseAnswers: falseAnswers.load(), elements: elements.load(),
            finalRemoveWasNil: queue.remove() == nil)
    }
}

/// A pointer that the threads of a test share (the memory behind it is accessed atomically).
struct UnsafeSendablePointer<Pointee>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Pointee>
    init(_ pointer: UnsafeMutablePointer<Pointee>) { self.pointer = pointer }
}
