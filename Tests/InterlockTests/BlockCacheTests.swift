import CInterlock
import Testing

@testable import Interlock

/// The cache of large blocks past their grace period (CShims/include/ilk_block_cache.h): a
/// segment of 1 KiB or more costs glibc's malloc a merge of every small chunk the program has
/// freed, so LockFreeQueue reuses its retired segments.
@Suite("Block cache")
struct BlockCacheTests {
    /// A size and alignment no queue uses, so that this test owns its slot.
    static let size = 3_000
    static let alignment = 64

    @Test("keeps blocks of a claimed size up to its cell limit, and hands them back zeroed")
    func keepsClaimedSizes() throws {
        let size = Self.size
        let alignment = Self.alignment
        let cells = Int(ILK_BLOCK_CACHE_CELLS)
        // Not claimed yet: a put is refused (the caller keeps the block).
        let stranger = try #require(ilk_block_alloc(size + 16, alignment))
        #expect(ilk_block_cache_put(stranger, size + 16, alignment) == 0)
        ilk_block_free(stranger)
        // The first allocation claims the slot; the cache is empty, so the block is new.
        let first = try #require(ilk_block_cache_alloc_zeroed(size, alignment))
        #expect(Int(bitPattern: first) % alignment == 0)
        first.initializeMemory(as: UInt8.self, repeating: 0xA5, count: size)
        #expect(ilk_block_cache_put(first, size, alignment) == 1)
        #expect(ilk_block_cache_count(size, alignment) == 1)
        // The same block comes back, every byte zero.
        let again = try #require(ilk_block_cache_alloc_zeroed(size, alignment))
        #expect(again == first)
        let bytes = UnsafeRawBufferPointer(start: again, count: size)
        #expect(bytes.allSatisfy { $0 == 0 })
        #expect(ilk_block_cache_count(size, alignment) == 0)
        // Up to the cell limit (128 KiB of 3,000-byte blocks exceeds the 16 cells), no more.
        var blocks = [again]
        for _ in 1..<cells { blocks.append(try #require(ilk_block_alloc(size, alignment))) }
        for block in blocks { #expect(ilk_block_cache_put(block, size, alignment) == 1) }
        let extra = try #require(ilk_block_alloc(size, alignment))
        #expect(ilk_block_cache_put(extra, size, alignment) == 0)
        ilk_block_free(extra)
        #expect(ilk_block_cache_count(size, alignment) == UInt32(cells))
        // Drain: every cached block comes out once.
        var drained = Set<UnsafeMutableRawPointer>()
        for _ in 0..<cells { drained.insert(try #require(ilk_block_cache_alloc_zeroed(size, alignment))) }
        #expect(drained == Set(blocks))
        #expect(ilk_block_cache_count(size, alignment) == 0)
        for block in drained { ilk_block_free(block) }
    }

    /// Elements of three words: a segment size that no other test's queue has.
    struct Triple: Equatable {
        var a = 0
        var b = 0
        var c = 0
    }

    @Test("a queue's retired segments come back from the cache after their grace period")
    func queueReusesRetiredSegments() {
        typealias Segment = _QueueSegment<Triple, _StandardQueueGeometry>
        let bytes = Segment.byteCount
        let alignment = Segment.blockAlignment
        let perSegment = Segment.slotCount
        let counts = LockGuarded([UInt32]())
        let queue = LockFreeQueue<Triple>()
        TestThread {
            // Four segments filled and emptied: three are left behind and retired.
            for value in 0..<(4 * perSegment) { queue.enqueue(Triple(a: value)) }
            for value in 0..<(4 * perSegment) { #expect(queue.dequeue() == Triple(a: value)) }
            ilk_rcu_barrier()  // this thread's retirements handed over, and their callbacks run
            counts.value.append(ilk_block_cache_count(bytes, alignment))
            // The next segments come from the cache.
            for value in 0..<(2 * perSegment) { queue.enqueue(Triple(b: value)) }
            counts.value.append(ilk_block_cache_count(bytes, alignment))
            for value in 0..<(2 * perSegment) { #expect(queue.dequeue() == Triple(b: value)) }
        }.join()
        let seen = counts.value
        #expect(seen.count == 2)
        #expect((seen.first ?? 0) >= 3, "retired segments cached: \(seen)")
        #expect((seen.last ?? .max) < (seen.first ?? 0), "segments taken from the cache: \(seen)")
    }
}
