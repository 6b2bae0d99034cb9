// The segment of LockFreeQueue: the layout of one block of slots and typed views into it.
// The algorithm, the slot states and the orderings are described in LockFreeQueue.swift.
//
// Layout of a segment (one raw block, 128-byte aligned; the queue's index words each own a
// line, because enqueuers hammer one and dequeuers the other):
//
//     offset   0   enqueueIndex  UInt64   next slot an enqueuer claims (fetch-and-add; may
//                                         run past slotCount when the segment is full)
//     offset 128   dequeueIndex  UInt64   next slot a dequeuer claims (fetch-and-add)
//     offset 256   next          pointer  the following segment, nil until linked (CAS, once)
//     offset 384   slots         slotCount x slotStride bytes
//
// A slot: a state word (UInt64) at offset 0, the element at slotElementOffset (after the state
// word, aligned for Element). slotStride rounds the slot up to the element's alignment.
//
// Index remapping: the slot of index i is not the i-th in memory. With a spacing of
// `slotsPerLine` slots (the smallest power of two whose slots span at least 128 bytes) and
// `lineGroups = slotCount / slotsPerLine` groups, index i is slot
// (i % lineGroups) * slotsPerLine + i / lineGroups: consecutive indices are at least 128
// bytes apart, so they sit in different lines whatever the slot size.
// Otherwise a dequeuer that follows right behind an enqueuer reads slot i while the
// enqueuer writes slot i + 1 of the same line, and the line moves between their cores on
// every element (false sharing). Nikolaev's SCQ (DISC 2019) remaps its ring the same way.
// The remap is a permutation of 0..<slotCount, so code that visits every index (deinit)
// still visits every slot.
//
// Geometry: slotCount comes from a type (`_QueueGeometry`), never from a stored value, so that
// it is a compile-time constant in specialized code (the index arithmetic folds into shifts
// and masks by constants). `LockFreeQueue` uses `_StandardQueueGeometry`; tests use segments
// of one to four slots, where a few operations link, cross and retire several segments, and
// huge ones. With fewer slots than `slotsPerLine`, the remap is the identity.

import CInterlock

/// How many slots a queue's segments hold.
@usableFromInline
internal protocol _QueueGeometry {
    /// Slots per segment for slots of `slotStride` bytes: a power of two (the index remap
    /// relies on it).
    static func slotCount(slotStride: Int) -> Int
}

/// The geometry of `LockFreeQueue`.
@frozen @usableFromInline
internal enum _StandardQueueGeometry: _QueueGeometry {
    /// 1024 slots keep the per-segment costs (allocation, the CAS that links it, the
    /// retirement) below 0.1% of the operations and a segment of `Int` at 16 KiB, well under
    /// malloc's mmap threshold. Fewer for large elements, so a segment stays near 64 KiB.
    @inlinable @inline(__always)
    internal static func slotCount(slotStride: Int) -> Int {
        _floorPowerOfTwo(Swift.max(32, Swift.min(1024, (64 * 1024) / slotStride)))
    }
}

/// Typed access to one segment of a queue of `Element`s whose segments have the slot count of
/// `Geometry`.
@frozen @usableFromInline
internal struct _QueueSegment<Element, Geometry: _QueueGeometry> {
    /// The segment's block.
    @usableFromInline internal let base: UnsafeMutableRawPointer

    @inlinable @inline(__always)
    internal init(_ base: UnsafeMutableRawPointer) {
        self.base = base
    }

    // MARK: Layout constants

    /// Slots per segment (see `_StandardQueueGeometry`); always a power of two.
    @inlinable @inline(__always)
    internal static var slotCount: Int {
        Geometry.slotCount(slotStride: slotStride)
    }

    /// The remap's spacing between consecutive indices, in slots: the smallest power of two
    /// whose slots span at least one 128-byte line (1 for slots of 128 bytes or more).
    @inlinable @inline(__always)
    internal static var slotsPerLine: Int {
        let perLine = (_lockFreeLineSize + slotStride - 1) / slotStride  // rounded up
        return Swift.min(slotCount, perLine <= 1 ? 1 : _floorPowerOfTwo(perLine - 1) << 1)
    }

    /// The slot (position in memory) of index `index`: see "Index remapping" above.
    @inlinable @inline(__always)
    internal static func _physical(_ index: Int) -> Int {
        let lineGroups = slotCount / slotsPerLine  // a power of two
        // Shifts and masks: both counts are powers of two (a division would stay a division in
        // code that is not specialized).
        return (index & (lineGroups &- 1)) &<< slotsPerLine.trailingZeroBitCount
            &+ index &>> lineGroups.trailingZeroBitCount
    }

    @inlinable @inline(__always)
    internal static var enqueueIndexOffset: Int { 0 }

    @inlinable @inline(__always)
    internal static var dequeueIndexOffset: Int { _lockFreeLineSize }

    @inlinable @inline(__always)
    internal static var nextOffset: Int { 2 * _lockFreeLineSize }

    @inlinable @inline(__always)
    internal static var slotsOffset: Int { 3 * _lockFreeLineSize }

    @inlinable @inline(__always)
    internal static var slotElementOffset: Int {
        _roundUp(MemoryLayout<UInt64>.size, toMultipleOf: MemoryLayout<Element>.alignment)
    }

    @inlinable @inline(__always)
    internal static var slotAlignment: Int {
        Swift.max(MemoryLayout<UInt64>.alignment, MemoryLayout<Element>.alignment)
    }

    @inlinable @inline(__always)
    internal static var slotStride: Int {
        _roundUp(slotElementOffset + MemoryLayout<Element>.size, toMultipleOf: slotAlignment)
    }

    @inlinable @inline(__always)
    internal static var byteCount: Int {
        slotsOffset + slotCount * slotStride
    }

    @inlinable @inline(__always)
    internal static var blockAlignment: Int {
        Swift.max(_lockFreeLineSize, slotAlignment)
    }

    // MARK: Slot states (see LockFreeQueue.swift)

    /// No element, no dequeuer yet: the initial state (zeroed memory).
    @inlinable @inline(__always) internal static var empty: UInt64 { 0 }
    /// The enqueuer stored its element (release); a dequeuer may take it.
    @inlinable @inline(__always) internal static var full: UInt64 { 1 }
    /// A dequeuer came: it took the element, or poisoned the empty slot. Final.
    @inlinable @inline(__always) internal static var taken: UInt64 { 2 }

    // MARK: Creation

    /// A new, unlinked segment: indices 0, next nil, every slot empty. From the block cache
    /// (CShims/include/ilk_block_cache.h) when a retired segment of this size is there.
    @inlinable
    internal static func allocate() -> _QueueSegment {
        let block = ilk_block_cache_alloc_zeroed(byteCount, blockAlignment)!
        return _QueueSegment(block)
    }

    /// Gives back a segment that no other thread can reach (never published, or its queue is
    /// being destroyed), with no grace period: to the block cache while it is under its
    /// retention, else to malloc. An enqueuer that lost the race to link a new segment
    /// discards one at most segment switches with two or more producers; freeing it (16 KiB,
    /// a large chunk for glibc) merged the small chunks the rest of the process had freed:
    /// 6 % of `LockFreeQueue`'s samples beside the neighbour process (Benchmarks/README.md,
    /// "The segment an enqueuer did not link").
    @inlinable
    internal func discard() {
        if ilk_block_cache_put(base, Self.byteCount, Self.blockAlignment) == 0 {
            ilk_block_free(base)
        }
    }

    // MARK: Views

    @inlinable @inline(__always)
    internal var enqueueIndex: UnsafeMutablePointer<UInt64> {
        (base + Self.enqueueIndexOffset).assumingMemoryBound(to: UInt64.self)
    }

    @inlinable @inline(__always)
    internal var dequeueIndex: UnsafeMutablePointer<UInt64> {
        (base + Self.dequeueIndexOffset).assumingMemoryBound(to: UInt64.self)
    }

    @inlinable @inline(__always)
    internal var next: UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (base + Self.nextOffset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    /// The state word of the slot of index `index`.
    @inlinable @inline(__always)
    internal func state(_ index: Int) -> UnsafeMutablePointer<UInt64> {
        (base + Self.slotsOffset + Self._physical(index) &* Self.slotStride).assumingMemoryBound(to: UInt64.self)
    }

    /// The element storage of the slot of index `index`, as raw memory (bind it when
    /// initializing).
    @inlinable @inline(__always)
    internal func rawElement(_ index: Int) -> UnsafeMutableRawPointer {
        base + Self.slotsOffset + Self._physical(index) &* Self.slotStride + Self.slotElementOffset
    }

    /// The element of the slot of index `index`.
    @inlinable @inline(__always)
    internal func element(_ index: Int) -> UnsafeMutablePointer<Element> {
        rawElement(index).assumingMemoryBound(to: Element.self)
    }
}
