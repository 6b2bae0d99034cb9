// swift-format-ignore-file: AlwaysUseLowerCamelCase
// OSAtomic: every function of Apple's <libkern/OSAtomic.h> (OSAtomicDeprecated.h) with the Swift
// signature of Darwin's SDK import: the same names, argument labels (`_ __theAmount` ...),
// argument order, pointer types (implicitly unwrapped, as Darwin imports them: the header has
// no nullability annotations) and return conventions, so a ported call site compiles unchanged.
//
// Return conventions (as on Darwin):
//   OSAtomicAdd/Increment/Decrement{32,64}      -> the NEW value
//   OSAtomicOr/And/Xor32                         -> the NEW value, as Int32
//   OSAtomicOr/And/Xor32Orig                     -> the ORIGINAL value, as Int32
//   OSAtomicCompareAndSwap{32,64,Int,Long,Ptr}   -> true when the swap happened
//   OSAtomicTestAndSet/Clear                     -> the ORIGINAL value of the bit
// Arithmetic wraps on overflow, as the C functions do.
//
// Memory ordering: a function whose name ends in `Barrier` is a full barrier, as OSAtomic's
// header documents its barrier forms: a sequentially consistent operation, followed on every
// target but x86-64 by a sequentially consistent fence (ilk_osatomic.h argues why the operation
// alone is not a full barrier on AArch64, and why x86-64 needs no fence). The other forms are
// relaxed (atomic, and ordering no other memory access), which is all Darwin promises for them.
// Each function is one Swift atomic builtin (Synchronization.Atomic viewed on the caller's
// memory), plus the fence of a `Barrier` form, so that it stays an instruction even inside a
// protocol witness, where IRGen keeps calls to the C shim out of line (Interlock's
// WordAtomics.swift); ThreadSanitizer sees every one of them. The C shim's table
// (ilk_osatomic.h) implements the same contract for C callers.
//
// Where Darwin is undefined: the integer and pointer functions require a naturally aligned
// operand (4 bytes for the 32-bit forms, 8 for the 64-bit, Long and Ptr forms on 64-bit
// platforms). Darwin leaves a misaligned operand undefined (arm64 faults, x86-64 may tear); here
// each such function checks the alignment first and traps with a message naming the function
// and the address (one test and branch). OSAtomicTestAndSet/Clear work on one byte and accept
// any address, as on Darwin. A nil pointer traps where the implicitly unwrapped argument is
// unwrapped, where the C function would fault.

import CInterlock
import Synchronization

/// Darwin's `OSAtomic_int64_aligned64_t`: the 64-bit operand of the 64-bit functions, which
/// must be 8-byte aligned (Darwin declares it with `__attribute__((aligned(8)))`; Swift's
/// `Int64` always is, so the name is an alias). A misaligned operand traps (see the functions).
public typealias OSAtomic_int64_aligned64_t = Int64

/// Traps when `pointer` is not aligned to `alignment` bytes (the file comment).
@inlinable @inline(__always)
internal func _osAtomicCheckAligned(_ pointer: UnsafeRawPointer, _ alignment: UInt, _ function: StaticString) {
    if _slowPath(UInt(bitPattern: Int(bitPattern: pointer)) & (alignment &- 1) != 0) {
        _osAtomicMisaligned(pointer, alignment, function)
    }
}

/// The operand at `pointer` viewed as a Swift atomic: the operations are Swift's builtins, so
/// they stay instructions inside protocol witnesses too (Interlock's WordAtomics.swift).
@inlinable @inline(__always)
internal func _osAtomic<Value: AtomicRepresentable>(
    _ pointer: UnsafeMutablePointer<Value>
) -> UnsafeMutablePointer<Atomic<Value>> {
    // SAFETY: Atomic<Value> has Value's size, alignment (checked by the caller) and bits; the
    // caller owns the memory and, as with OSAtomic, accesses it only through these functions
    // while threads share it.
    UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: Atomic<Value>.self)
}

/// Completes a `Barrier` form (the file comment): a sequentially consistent fence after the
/// operation, except on x86-64, where the locked instruction already is a full barrier.
@inlinable @inline(__always)
internal func _osBarrierTail<Result>(_ result: Result) -> Result {
    #if !arch(x86_64)
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    #endif
    return result
}

/// OSAtomic's bit `n` of the bytes at `address`: the byte `address + n / 8` and the mask
/// `0x80 >> (n % 8)`.
@inlinable @inline(__always)
internal func _osBit(_ n: UInt32, _ address: UnsafeMutableRawPointer) -> (UnsafeMutablePointer<Atomic<UInt8>>, UInt8) {
    // SAFETY: one byte, always aligned; the caller's memory, accessed atomically while shared.
    ((address + Int(n >> 3)).assumingMemoryBound(to: Atomic<UInt8>.self), UInt8(truncatingIfNeeded: 0x80 >> (n & 7)))
}

/// Sets OSAtomic's bit `n` at `address`; returns its original value.
@inlinable @inline(__always)
internal func _osTestAndSet(_ n: UInt32, _ address: UnsafeMutableRawPointer, barrier: Bool) -> Bool {
    let (byte, mask) = _osBit(n, address)
    let old =
        barrier
        ? _osBarrierTail(byte.pointee.bitwiseOr(mask, ordering: .sequentiallyConsistent).oldValue)
        : byte.pointee.bitwiseOr(mask, ordering: .relaxed).oldValue
    return old & mask != 0
}

/// Clears OSAtomic's bit `n` at `address`; returns its original value.
@inlinable @inline(__always)
internal func _osTestAndClear(_ n: UInt32, _ address: UnsafeMutableRawPointer, barrier: Bool) -> Bool {
    let (byte, mask) = _osBit(n, address)
    let old =
        barrier
        ? _osBarrierTail(byte.pointee.bitwiseAnd(~mask, ordering: .sequentiallyConsistent).oldValue)
        : byte.pointee.bitwiseAnd(~mask, ordering: .relaxed).oldValue
    return old & mask != 0
}

@usableFromInline @inline(never)
internal func _osAtomicMisaligned(_ pointer: UnsafeRawPointer, _ alignment: UInt, _ function: StaticString) -> Never {
    fatalError("\(function): the address \(pointer) is not aligned to \(alignment) bytes")
}

// MARK: - Arithmetic

/// Atomically adds `__theAmount` to `*__theValue`, without a barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd32(_ __theAmount: Int32, _ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAdd32")
    return _osAtomic(__theValue).pointee.wrappingAdd(__theAmount, ordering: .relaxed).newValue
}

/// Atomically adds 1 to `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement32(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicIncrement32")
    return _osAtomic(__theValue).pointee.wrappingAdd(1, ordering: .relaxed).newValue
}

/// Atomically subtracts 1 from `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement32(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicDecrement32")
    return _osAtomic(__theValue).pointee.wrappingSubtract(1, ordering: .relaxed).newValue
}

/// Atomically adds `__theAmount` to `*__theValue`, with a full barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd32Barrier(_ __theAmount: Int32, _ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAdd32Barrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.wrappingAdd(__theAmount, ordering: .sequentiallyConsistent).newValue)
}

/// Atomically adds 1 to `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement32Barrier(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicIncrement32Barrier")
    return _osBarrierTail(_osAtomic(__theValue).pointee.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue)
}

/// Atomically subtracts 1 from `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement32Barrier(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicDecrement32Barrier")
    return _osBarrierTail(_osAtomic(__theValue).pointee.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue)
}

/// Atomically adds `__theAmount` to `*__theValue`, without a barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd64(_ __theAmount: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!)
    -> Int64
{
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicAdd64")
    return _osAtomic(__theValue).pointee.wrappingAdd(__theAmount, ordering: .relaxed).newValue
}

/// Atomically adds 1 to `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement64(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicIncrement64")
    return _osAtomic(__theValue).pointee.wrappingAdd(1, ordering: .relaxed).newValue
}

/// Atomically subtracts 1 from `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement64(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicDecrement64")
    return _osAtomic(__theValue).pointee.wrappingSubtract(1, ordering: .relaxed).newValue
}

/// Atomically adds `__theAmount` to `*__theValue`, with a full barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd64Barrier(_ __theAmount: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!)
    -> Int64
{
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicAdd64Barrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.wrappingAdd(__theAmount, ordering: .sequentiallyConsistent).newValue)
}

/// Atomically adds 1 to `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement64Barrier(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicIncrement64Barrier")
    return _osBarrierTail(_osAtomic(__theValue).pointee.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue)
}

/// Atomically subtracts 1 from `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement64Barrier(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicDecrement64Barrier")
    return _osBarrierTail(_osAtomic(__theValue).pointee.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue)
}

// MARK: - Bitwise (32-bit only, as on Darwin)

/// Atomically ORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32")
    return Int32(bitPattern: _osAtomic(__theValue).pointee.bitwiseOr(__theMask, ordering: .relaxed).newValue)
}

/// Atomically ORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32Barrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32Barrier")
    return Int32(
        bitPattern: _osBarrierTail(
            _osAtomic(__theValue).pointee.bitwiseOr(__theMask, ordering: .sequentiallyConsistent).newValue))
}

/// Atomically ORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32Orig(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32Orig")
    return Int32(bitPattern: _osAtomic(__theValue).pointee.bitwiseOr(__theMask, ordering: .relaxed).oldValue)
}

/// Atomically ORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32OrigBarrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32OrigBarrier")
    return Int32(
        bitPattern: _osBarrierTail(
            _osAtomic(__theValue).pointee.bitwiseOr(__theMask, ordering: .sequentiallyConsistent).oldValue))
}

/// Atomically ANDs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32")
    return Int32(bitPattern: _osAtomic(__theValue).pointee.bitwiseAnd(__theMask, ordering: .relaxed).newValue)
}

/// Atomically ANDs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32Barrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32Barrier")
    return Int32(
        bitPattern: _osBarrierTail(
            _osAtomic(__theValue).pointee.bitwiseAnd(__theMask, ordering: .sequentiallyConsistent).newValue))
}

/// Atomically ANDs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32Orig(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32Orig")
    return Int32(bitPattern: _osAtomic(__theValue).pointee.bitwiseAnd(__theMask, ordering: .relaxed).oldValue)
}

/// Atomically ANDs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32OrigBarrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32OrigBarrier")
    return Int32(
        bitPattern: _osBarrierTail(
            _osAtomic(__theValue).pointee.bitwiseAnd(__theMask, ordering: .sequentiallyConsistent).oldValue))
}

/// Atomically XORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32")
    return Int32(bitPattern: _osAtomic(__theValue).pointee.bitwiseXor(__theMask, ordering: .relaxed).newValue)
}

/// Atomically XORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32Barrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32Barrier")
    return Int32(
        bitPattern: _osBarrierTail(
            _osAtomic(__theValue).pointee.bitwiseXor(__theMask, ordering: .sequentiallyConsistent).newValue))
}

/// Atomically XORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32Orig(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32Orig")
    return Int32(bitPattern: _osAtomic(__theValue).pointee.bitwiseXor(__theMask, ordering: .relaxed).oldValue)
}

/// Atomically XORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32OrigBarrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32OrigBarrier")
    return Int32(
        bitPattern: _osBarrierTail(
            _osAtomic(__theValue).pointee.bitwiseXor(__theMask, ordering: .sequentiallyConsistent).oldValue))
}

// MARK: - Compare and swap

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap32(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwap32")
    return _osAtomic(__theValue).pointee.compareExchange(
        expected: __oldValue, desired: __newValue, successOrdering: .relaxed, failureOrdering: .relaxed
    ).exchanged
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap32Barrier(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwap32Barrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.compareExchange(
            expected: __oldValue, desired: __newValue, successOrdering: .sequentiallyConsistent,
            failureOrdering: .sequentiallyConsistent
        ).exchanged)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap64(
    _ __oldValue: Int64, _ __newValue: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicCompareAndSwap64")
    return _osAtomic(__theValue).pointee.compareExchange(
        expected: __oldValue, desired: __newValue, successOrdering: .relaxed, failureOrdering: .relaxed
    ).exchanged
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap64Barrier(
    _ __oldValue: Int64, _ __newValue: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicCompareAndSwap64Barrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.compareExchange(
            expected: __oldValue, desired: __newValue, successOrdering: .sequentiallyConsistent,
            failureOrdering: .sequentiallyConsistent
        ).exchanged)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapInt(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwapInt")
    return _osAtomic(__theValue).pointee.compareExchange(
        expected: __oldValue, desired: __newValue, successOrdering: .relaxed, failureOrdering: .relaxed
    ).exchanged
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapIntBarrier(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwapIntBarrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.compareExchange(
            expected: __oldValue, desired: __newValue, successOrdering: .sequentiallyConsistent,
            failureOrdering: .sequentiallyConsistent
        ).exchanged)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapLong(_ __oldValue: Int, _ __newValue: Int, _ __theValue: UnsafeMutablePointer<Int>!)
    -> Bool
{
    _osAtomicCheckAligned(__theValue, UInt(MemoryLayout<Int>.alignment), "OSAtomicCompareAndSwapLong")
    return _osAtomic(__theValue).pointee.compareExchange(
        expected: __oldValue, desired: __newValue, successOrdering: .relaxed, failureOrdering: .relaxed
    ).exchanged
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapLongBarrier(
    _ __oldValue: Int, _ __newValue: Int, _ __theValue: UnsafeMutablePointer<Int>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, UInt(MemoryLayout<Int>.alignment), "OSAtomicCompareAndSwapLongBarrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.compareExchange(
            expected: __oldValue, desired: __newValue, successOrdering: .sequentiallyConsistent,
            failureOrdering: .sequentiallyConsistent
        ).exchanged)
}

/// Atomically replaces the pointer `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the pointer was swapped.
@inlinable
public func OSAtomicCompareAndSwapPtr(
    _ __oldValue: UnsafeMutableRawPointer!, _ __newValue: UnsafeMutableRawPointer!,
    _ __theValue: UnsafeMutablePointer<UnsafeMutableRawPointer?>!
) -> Bool {
    _osAtomicCheckAligned(
        __theValue, UInt(MemoryLayout<UnsafeMutableRawPointer?>.alignment), "OSAtomicCompareAndSwapPtr")
    return _osAtomic(__theValue).pointee.compareExchange(
        expected: __oldValue, desired: __newValue, successOrdering: .relaxed, failureOrdering: .relaxed
    ).exchanged
}

/// Atomically replaces the pointer `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the pointer was swapped.
@inlinable
public func OSAtomicCompareAndSwapPtrBarrier(
    _ __oldValue: UnsafeMutableRawPointer!, _ __newValue: UnsafeMutableRawPointer!,
    _ __theValue: UnsafeMutablePointer<UnsafeMutableRawPointer?>!
) -> Bool {
    _osAtomicCheckAligned(
        __theValue, UInt(MemoryLayout<UnsafeMutableRawPointer?>.alignment), "OSAtomicCompareAndSwapPtrBarrier")
    return _osBarrierTail(
        _osAtomic(__theValue).pointee.compareExchange(
            expected: __oldValue, desired: __newValue, successOrdering: .sequentiallyConsistent,
            failureOrdering: .sequentiallyConsistent
        ).exchanged)
}

// MARK: - Bit test and set/clear

/// Atomically sets bit `__n` of the bytes at `__theAddress`, without a barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndSet(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    _osTestAndSet(__n, __theAddress, barrier: false)
}

/// Atomically sets bit `__n` of the bytes at `__theAddress`, with a full barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndSetBarrier(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    _osTestAndSet(__n, __theAddress, barrier: true)
}

/// Atomically clears bit `__n` of the bytes at `__theAddress`, without a barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndClear(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    _osTestAndClear(__n, __theAddress, barrier: false)
}

/// Atomically clears bit `__n` of the bytes at `__theAddress`, with a full barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndClearBarrier(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    _osTestAndClear(__n, __theAddress, barrier: true)
}

// MARK: - Barrier

/// A full memory barrier: every memory access before it is ordered before every access after
/// it (a sequentially consistent fence).
@inlinable
public func OSMemoryBarrier() {
    ilk_fence_full()
}
