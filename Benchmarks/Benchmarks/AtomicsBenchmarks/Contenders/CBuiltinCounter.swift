// The C peer: GCC/Clang __atomic builtins (CPeers/ilk_peer_atomic.h, static inline) on a plain
// int64_t in its own heap allocation, 128-byte aligned so no other data shares its cache line
// pair. The class only owns the allocation; its address is a `let`, read once per loop.

import CPeers

/// An Int64 in a heap allocation, operated on with the C builtins.
final class CBuiltinCounter: AtomicCounter, @unchecked Sendable {
    // SAFETY: allocated in init, freed in deinit; only the C builtins touch it in between.
    let word: UnsafeMutablePointer<Int64>

    /// A counter holding zero.
    init() {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: 128, alignment: 128)
        word = raw.initializeMemory(as: Int64.self, repeating: 0, count: 1)
    }

    deinit {
        word.deinitialize(count: 1)
        UnsafeMutableRawPointer(word).deallocate()
    }

    static var contenderName: String { "C __atomic builtin" }

    @inline(__always)
    func benchIncrement() { _ = ilk_peer_atomic_fetch_add(word, 1) }

    @inline(__always)
    func benchLoadRelaxed() -> Int64 { ilk_peer_atomic_load_relaxed(word) }

    @inline(__always)
    func benchLoad() -> Int64 { ilk_peer_atomic_load(word) }

    @inline(__always)
    func benchStore(_ value: Int64) { ilk_peer_atomic_store(word, value) }

    @inline(__always)
    func benchCompareExchange(expected: Int64, desired: Int64) -> (exchanged: Bool, original: Int64) {
        var found = expected
        let exchanged = ilk_peer_atomic_compare_exchange(word, &found, desired)
        return (exchanged, found)
    }
}
