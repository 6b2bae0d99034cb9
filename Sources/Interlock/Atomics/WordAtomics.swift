// The lock words' fast-path atomics as Swift builtins: a view of a 32-bit word at a stable
// address as a `Synchronization.Atomic<UInt32>`, so that the uncontended lock and unlock of
// every lock are atomic instructions in the caller, in every context.
//
// Why not the C shim's `static inline` functions, which the slow paths keep using: inside a
// protocol-witness thunk, Swift's IRGen marks every call `noinline` (the Swift compiler's test
// SILOptimizer/inline_thunk.swift pins it). When the SIL inliner brings `Lock.lock()` into the
// witness of `Locking.lock()`, or into a client's own conformance whose method takes a lock, the
// shim's functions stayed calls there: `ilk_atomic_cas_value_u32` for the lock, and
// `ilk_flag_asm_usable` plus `ilk_mutex_release_asm` for the unlock, in a release build of a
// dependent (objdump). A `Synchronization.Atomic` operation is lowered by IRGen itself to an
// LLVM atomic instruction, never a call. Deciding figure: `Lock` through `any Locking`, 8.1 -> 5.6
// ns per lock+unlock. ReadWriteLock, Semaphore and WaitGroup do the same; every row is in
// Benchmarks/README.md ("Lock fast paths through a protocol witness", "ReadWriteLock through a
// witness", "Semaphore and WaitGroup after their fast-path change").
// The mutex release and the read unlock stay one C function each (`ilk_mutex_release`,
// `ilk_rwlock_reader_leave`): `lock subl` and its flags beat the builtin's `lock xadd` and a
// compare. `make witness-inlining` keeps every fast path inside a dependent's witnesses free of
// other shim calls.
//
// Mixed access: the slow paths (C, and Swift calling the C shim) reach the same words with
// C11 `__atomic` builtins of the same size. Both are atomic operations on the same location in
// the one C11/LLVM memory model, so they synchronize with each other as any two atomics do,
// and ThreadSanitizer instruments both. No word is ever accessed non-atomically after init.

import Synchronization

/// Atomic views of signed 64-bit words (Semaphore's count; see the file comment).
@usableFromInline
internal enum _WordInt64 {
    /// The word at `word` viewed as an `Atomic<Int64>`.
    @inlinable @inline(__always)
    internal static func atomic(_ word: UnsafeMutablePointer<Int64>) -> UnsafeMutablePointer<Atomic<Int64>> {
        // SAFETY: as `_Word32.atomic`, for a naturally aligned 64-bit word.
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: Atomic<Int64>.self)
    }
}

/// Atomic views of 64-bit lock words (ReadWriteLock's reader count; see the file comment).
@usableFromInline
internal enum _Word64 {
    /// The word at `word` viewed as an `Atomic<UInt64>`.
    @inlinable @inline(__always)
    internal static func atomic(_ word: UnsafeMutablePointer<UInt64>) -> UnsafeMutablePointer<Atomic<UInt64>> {
        // SAFETY: as `_Word32.atomic`, for a naturally aligned 64-bit word.
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: Atomic<UInt64>.self)
    }
}

/// Atomic views of 32-bit lock words (see the file comment).
@usableFromInline
internal enum _Word32 {
    /// The word at `word` viewed as an `Atomic<UInt32>`.
    @inlinable @inline(__always)
    internal static func atomic(_ word: UnsafeMutablePointer<UInt32>) -> UnsafeMutablePointer<Atomic<UInt32>> {
        // SAFETY: Atomic<UInt32> has UInt32's size and alignment and holds exactly its bits; the
        // word lives at a stable address for the lock's lifetime and is only ever accessed
        // atomically (this view, or the C shim's atomics of the same size).
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: Atomic<UInt32>.self)
    }
}
