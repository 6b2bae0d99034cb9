// Deliberately broken containers: the checker must reject some of their histories, or it
// proves nothing about the real ones.
//
// * `MutexStack` checked against the FIFO specification: a "queue" that is really a stack.
//   Wrong even without concurrency; the checker rejects it whenever a history removes two
//   elements.
// * `RacyArrayQueue` and `RacyArrayStack`: arrays with an index that is read, then written
//   back, instead of being advanced by compare-and-swap. Two concurrent inserts can claim the
//   same slot (one element is lost), two concurrent removes can return the same element
//   (a duplicate), and a stale index written back can resurrect removed elements. They are
//   wrong only under races, which is exactly what the recorder must provoke. A `yield`
//   between the read and the write-back widens the window so that races happen in a few
//   hundred rounds even on two cores.
//
// Every shared word is accessed with atomic operations (relaxed where the algorithm is wrong
// anyway; the index publication uses release/acquire so a reader sees the slot written before
// it), so the containers are free of data races in the C11 sense: ThreadSanitizer has nothing
// to report, and the only thing that can catch them is the linearizability checker.

import CInterlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Slots and two indices in one stable allocation, accessed only atomically.
private final class AtomicWords: @unchecked Sendable {
    // SAFETY: allocated once, never moved or resized, freed in deinit after the last use;
    // every access after init goes through the ilk_atomic_* builtins.
    let words: UnsafeMutablePointer<Int>

    init(count: Int) {
        words = .allocate(capacity: count)
        words.initialize(repeating: 0, count: count)
    }

    deinit { words.deallocate() }

    @inline(__always) func load(_ index: Int, acquire: Bool = false) -> Int {
        ilk_atomic_load_iptr(words + index, acquire ? ILK_ORDER_ACQUIRE : ILK_ORDER_RELAXED)
    }

    @inline(__always) func store(_ index: Int, _ value: Int, release: Bool = false) {
        ilk_atomic_store_iptr(words + index, value, release ? ILK_ORDER_RELEASE : ILK_ORDER_RELAXED)
    }
}

/// Lets another thread run between reading a shared index and writing it back.
@inline(__always) private func widenRaceWindow() { sched_yield() }

/// Slots handed out per container; a history never inserts more than this.
private let racySlotCount = LinearizabilityChecker<QueueSpecification>.maximumOperations

/// BROKEN: a FIFO ring whose head and tail are advanced by load-then-store, not CAS.
final class RacyArrayQueue: ContainerUnderTest {
    // Layout: word 0 = head (next slot to remove), word 1 = tail (next slot to fill),
    // words 2... = slots. Indices only grow, and every operation moves one by at most one,
    // so they stay below `racySlotCount` within a history.
    private let memory = AtomicWords(count: 2 + racySlotCount)

    init() {}

    // swift-format-ignore
    func insert(_ value: Int) {
        let tail = memory.load(1)                        // relaxed: the race is the point
        widenRaceWindow()
        memory.store(2 + tail, value)                    // relaxed: published by the next store
        memory.store(1, tail + 1, release: true)         // pairs with the acquire in remove/isEmpty
    }

    // swift-format-ignore
    func remove() -> Int? {
        let head = memory.load(0)                        // relaxed: the race is the point
        if head >= memory.load(1, acquire: true) { return nil }  // pairs with insert's release
        widenRaceWindow()
        let value = memory.load(2 + head)
        memory.store(0, head + 1)
        return value
    }

    var isEmpty: Bool { memory.load(0) >= memory.load(1, acquire: true) }
}

/// BROKEN: a LIFO array whose top index is advanced by load-then-store, not CAS.
final class RacyArrayStack: ContainerUnderTest {
    // Layout: word 0 = top (number of elements), words 1... = slots.
    private let memory = AtomicWords(count: 1 + racySlotCount)

    init() {}

    // swift-format-ignore
    func insert(_ value: Int) {
        let top = memory.load(0)                         // relaxed: the race is the point
        widenRaceWindow()
        memory.store(1 + top, value)                     // relaxed: published by the next store
        memory.store(0, top + 1, release: true)          // pairs with the acquire in remove
    }

    // swift-format-ignore
    func remove() -> Int? {
        let top = memory.load(0, acquire: true)          // pairs with insert's release
        if top == 0 { return nil }
        widenRaceWindow()
        let value = memory.load(top)
        memory.store(0, top - 1)
        return value
    }

    var isEmpty: Bool { memory.load(0, acquire: true) == 0 }
}
