import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The cache of large blocks past their grace period (CShims/include/ilk_block_cache.h): a
/// segment of 1 KiB or more costs glibc's malloc a merge of every small chunk the program has
/// freed, so LockFreeQueue reuses its retired segments.
///
/// Each test runs in a child process: the cache's slots are process-wide, and the first sizes
/// to ask for a slot keep it, so in the test process the other tests' queues (segments of one
/// to 1,024 slots of many element types) may have claimed them all.
@Suite("Block cache")
struct BlockCacheTests {
    @Test("keeps blocks of a claimed size up to its floor, and hands them back zeroed (child process)")
    func keepsClaimedSizes() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let size = 3_000
            let alignment = 64
            ilk_demand_fix_epoch(10)  // the policy's clock stands still in this test
            // 128 KiB of 3,000-byte blocks: what the slot keeps without recent demand.
            let floor = Int(ILK_BLOCK_CACHE_BYTES) / size
            // Not claimed yet: a put is refused (the caller keeps the block).
            let stranger = ilk_block_alloc(size + 16, alignment)!
            childCheck(ilk_block_cache_put(stranger, size + 16, alignment) == 0, "an unclaimed size was kept")
            ilk_block_free(stranger)
            // The first allocation claims the slot; the cache is empty, so the block is new.
            let first = ilk_block_cache_alloc_zeroed(size, alignment)!
            childCheck(Int(bitPattern: first) % alignment == 0, "a block is not aligned to \(alignment)")
            first.initializeMemory(as: UInt8.self, repeating: 0xA5, count: size)
            childCheck(ilk_block_cache_put(first, size, alignment) == 1, "a claimed size was refused")
            childCheck(ilk_block_cache_count(size, alignment) == 1, "the cache does not count the block")
            // The same block comes back, every byte zero.
            let again = ilk_block_cache_alloc_zeroed(size, alignment)!
            childCheck(again == first, "the cached block did not come back")
            childCheck(
                UnsafeRawBufferPointer(start: again, count: size).allSatisfy { $0 == 0 }, "a reused block is not zeroed"
            )
            childCheck(ilk_block_cache_count(size, alignment) == 0, "a taken block is still counted")
            // Two allocations of demand so far: up to the floor, no more.
            var blocks = [again]
            for _ in 1..<floor { blocks.append(ilk_block_alloc(size, alignment)!) }
            for block in blocks { childCheck(ilk_block_cache_put(block, size, alignment) == 1, "a put was refused") }
            let extra = ilk_block_alloc(size, alignment)!
            childCheck(ilk_block_cache_put(extra, size, alignment) == 0, "a put beyond the floor was kept")
            ilk_block_free(extra)
            childCheck(ilk_block_cache_count(size, alignment) == UInt32(floor), "the cache lost a block")
            // Drain: every cached block comes out once.
            var drained = Set<UnsafeMutableRawPointer>()
            for _ in 0..<floor { drained.insert(ilk_block_cache_alloc_zeroed(size, alignment)!) }
            childCheck(drained == Set(blocks), "the drained blocks are not the cached ones")
            childCheck(ilk_block_cache_count(size, alignment) == 0, "blocks left after the drain")
            for block in drained { ilk_block_free(block) }
        }
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }

    @Test(
        "keeps what the last two epochs allocated, up to its cap; gives the rest back as demand falls (child process)"
    )
    func retentionFollowsRecentDemand() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let size = 16_384
            let alignment = 128
            let floor = Int(ILK_BLOCK_CACHE_BYTES) / size  // 8
            let cap = Int(ILK_BLOCK_CACHE_MAX_BYTES) / size  // 1,024
            ilk_demand_fix_epoch(10)
            // A burst: 300 blocks allocated in this epoch, all given back: all kept.
            var burst: [UnsafeMutableRawPointer] = []
            for _ in 0..<300 { burst.append(ilk_block_cache_alloc_zeroed(size, alignment)!) }
            for block in burst {
                childCheck(ilk_block_cache_put(block, size, alignment) == 1, "a burst block was refused")
            }
            childCheck(ilk_block_cache_count(size, alignment) == 300, "the burst was not kept whole")
            // The next burst comes from the cache: the same blocks.
            var again = Set<UnsafeMutableRawPointer>()
            for _ in 0..<300 { again.insert(ilk_block_cache_alloc_zeroed(size, alignment)!) }
            childCheck(again == Set(burst), "the second burst did not reuse the first one's blocks")
            for block in again { childCheck(ilk_block_cache_put(block, size, alignment) == 1, "a block was refused") }
            // One epoch later, the last epoch's demand (600) still counts.
            ilk_demand_fix_epoch(11)
            let more = ilk_block_alloc(size, alignment)!
            childCheck(ilk_block_cache_put(more, size, alignment) == 1, "the previous epoch's demand was forgotten")
            // Two epochs later, with no demand since, only the floor is kept: puts are refused,
            // and each allocation takes one block and gives one more back to malloc.
            ilk_demand_fix_epoch(12)
            ilk_demand_fix_epoch(13)
            let late = ilk_block_alloc(size, alignment)!
            childCheck(ilk_block_cache_put(late, size, alignment) == 0, "a put above the floor was kept")
            ilk_block_free(late)
            var taken: [UnsafeMutableRawPointer] = []
            for _ in 0..<50 { taken.append(ilk_block_cache_alloc_zeroed(size, alignment)!) }
            let left = Int(ilk_block_cache_count(size, alignment))
            childCheck(left == 301 - 100, "after 50 allocations above the retention: \(left) cached, not 201")
            // Shrinking stops where the cache meets the current demand (or the floor).
            for _ in 0..<300 { taken.append(ilk_block_cache_alloc_zeroed(size, alignment)!) }
            let settled = Int(ilk_block_cache_count(size, alignment))
            childCheck(settled <= max(floor, taken.count), "\(settled) cached above a demand of \(taken.count)")
            for block in taken { ilk_block_free(block) }
            // The cap: a burst bigger than it keeps the cap's worth.
            ilk_demand_fix_epoch(20)
            while ilk_block_cache_count(size, alignment) > 0 {
                ilk_block_free(ilk_block_cache_alloc_zeroed(size, alignment)!)
            }
            var huge: [UnsafeMutableRawPointer] = []
            for _ in 0..<(cap + 10) { huge.append(ilk_block_cache_alloc_zeroed(size, alignment)!) }
            let kept = huge.filter { ilk_block_cache_put($0, size, alignment) == 1 }.count
            childCheck(kept == cap, "kept \(kept) of a burst of \(cap + 10), cap \(cap)")
            for block in huge.dropFirst(cap) { ilk_block_free(block) }
        }
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }

    @Test("a queue's retired segments come back from the cache after their grace period (child process)")
    func queueReusesRetiredSegments() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            typealias Segment = _QueueSegment<Int, _StandardQueueGeometry>
            let bytes = Segment.byteCount
            let alignment = Segment.blockAlignment
            let perSegment = Segment.slotCount
            let queue = LockFreeQueue<Int>()
            // Four segments filled and emptied on this thread: three are left behind, retired.
            for value in 0..<(4 * perSegment) { queue.enqueue(value) }
            for value in 0..<(4 * perSegment) { childCheck(queue.dequeue() == value, "lost or reordered \(value)") }
            ilk_rcu_barrier()  // this thread's retirements handed over, and their callbacks run
            let cached = ilk_block_cache_count(bytes, alignment)
            childCheck(cached >= 3, "retired segments cached: \(cached)")
            // The next segments come from the cache.
            for value in 0..<(2 * perSegment) { queue.enqueue(value) }
            let left = ilk_block_cache_count(bytes, alignment)
            childCheck(left < cached, "segments taken from the cache: \(cached) cached, \(left) left")
            for value in 0..<(2 * perSegment) { childCheck(queue.dequeue() == value, "lost or reordered \(value)") }
        }
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }

    @Test(
        "a segment no other thread reached goes to the cache at once: an enqueuer's unlinked one, a destroyed queue's (child process)"
    )
    func unpublishedSegmentsGoToTheCache() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            typealias Segment = _QueueSegment<Int, _StandardQueueGeometry>
            let bytes = Segment.byteCount
            let alignment = Segment.blockAlignment
            ilk_demand_fix_epoch(10)  // the policy's clock stands still: the floor and this demand
            // The segment an enqueuer allocated and then failed to link (_enqueueInNewSegment).
            let unlinked = Segment.allocate()
            let before = ilk_block_cache_count(bytes, alignment)
            unlinked.discard()
            childCheck(
                ilk_block_cache_count(bytes, alignment) == before + 1, "a discarded segment did not reach the cache")
            childCheck(
                Segment.allocate().base == unlinked.base, "the next segment is not the discarded one")
            // A queue of three segments, destroyed with its elements in it: every segment cached.
            var queue: LockFreeQueue<Int>? = LockFreeQueue<Int>()
            for value in 0..<(2 * Segment.slotCount + 1) { queue!.enqueue(value) }
            let held = ilk_block_cache_count(bytes, alignment)
            queue = nil
            let after = ilk_block_cache_count(bytes, alignment)
            childCheck(after == held + 3, "a destroyed queue's 3 segments: \(after - held) cached")
        }
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }

    @Test("a retirement batch's header comes back from the cache after its grace period (child process)")
    func retirementBatchHeadersAreReused() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let header = ilk_rcu_batch_header_bytes()
            let headerAlignment = ilk_rcu_batch_header_alignment()
            let size = 16_384
            let alignment = 128
            ilk_demand_fix_epoch(10)
            // Claim the block size's slot, then retire one full batch's worth of blocks.
            ilk_block_free(ilk_block_cache_alloc_zeroed(size, alignment))
            for _ in 0..<(Int(ILK_RCU_BATCH_BYTES) / size) {
                ilk_rcu_retire_cached(ilk_block_alloc(size, alignment), size, alignment)
            }
            ilk_rcu_barrier()  // the batch handed over, its callback run
            let cached = ilk_block_cache_count(header, headerAlignment)
            childCheck(cached >= 1, "no batch header in the cache after the callback")
            // The next batch takes its header from the cache.
            ilk_rcu_retire_cached(ilk_block_alloc(size, alignment), size, alignment)
            let left = ilk_block_cache_count(header, headerAlignment)
            childCheck(left == cached - 1, "the next batch did not take a cached header: \(cached) then \(left)")
            ilk_rcu_barrier()
        }
        if let result { print(String(decoding: result.standardErrorContent, as: UTF8.self), terminator: "") }
    }
}

/// In a child process of an exit test: says why on stderr and exits 1 unless `condition`.
private func childCheck(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    let line = "Block cache: \(message())\n"
    line.withCString { _ = write(2, $0, strlen($0)) }
    exit(1)
}
