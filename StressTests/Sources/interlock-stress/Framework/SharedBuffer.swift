// Plain memory shared by a workload's threads: what a primitive protects (a counter bumped
// inside a critical section) or operates on (a bitmap for raw-memory test-and-set).

/// A fixed-size buffer at a stable address, zero-initialized, freed with the object.
///
/// `@unchecked Sendable` because the elements are plain memory: the workload using it must
/// order every access through the primitive under test. That is the point: when the primitive
/// is broken the counts come out wrong, and ThreadSanitizer reports the race.
final class SharedBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    /// The first element; valid for `count` elements while the object lives.
    let base: UnsafeMutablePointer<Element>
    /// The number of elements.
    let count: Int

    /// Allocates `count` elements filled with `value`, aligned to 128 bytes (two cache lines,
    /// so that nothing else shares their lines).
    init(count: Int, repeating value: Element) {
        precondition(count > 0, "SharedBuffer: count must be positive, not \(count)")
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: max(count * MemoryLayout<Element>.stride, 128), alignment: 128)
        base = raw.bindMemory(to: Element.self, capacity: count)
        base.initialize(repeating: value, count: count)
        self.count = count
    }

    /// The buffer as raw memory (for the raw-memory atomics).
    var raw: UnsafeMutableRawPointer { UnsafeMutableRawPointer(base) }

    deinit {
        UnsafeMutableRawPointer(base).deallocate()
    }
}
