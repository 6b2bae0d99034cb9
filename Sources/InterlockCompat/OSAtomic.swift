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
// Each function is one C11 atomic from the C shim (ilk_osatomic.h, ilk_atomic.h, ilk_bits.h), so
// ThreadSanitizer sees every one of them. Inside a protocol witness (where IRGen marks calls
// noinline) that shim function stays a call; the locks' fast paths use Swift's builtins for that
// reason (Interlock's WordAtomics.swift), these do not yet.
//
// Where Darwin is undefined: the integer and pointer functions require a naturally aligned
// operand (4 bytes for the 32-bit forms, 8 for the 64-bit, Long and Ptr forms on 64-bit
// platforms). Darwin leaves a misaligned operand undefined (arm64 faults, x86-64 may tear); here
// each such function checks the alignment first and traps with a message naming the function
// and the address (one test and branch). OSAtomicTestAndSet/Clear work on one byte and accept
// any address, as on Darwin. A nil pointer traps where the implicitly unwrapped argument is
// unwrapped, where the C function would fault.

import CInterlock

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
    return ilk_osatomic_add32(__theAmount, __theValue)
}

/// Atomically adds 1 to `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement32(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicIncrement32")
    return ilk_osatomic_increment32(__theValue)
}

/// Atomically subtracts 1 from `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement32(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicDecrement32")
    return ilk_osatomic_decrement32(__theValue)
}

/// Atomically adds `__theAmount` to `*__theValue`, with a full barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd32Barrier(_ __theAmount: Int32, _ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAdd32Barrier")
    return ilk_osatomic_add32_barrier(__theAmount, __theValue)
}

/// Atomically adds 1 to `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement32Barrier(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicIncrement32Barrier")
    return ilk_osatomic_increment32_barrier(__theValue)
}

/// Atomically subtracts 1 from `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement32Barrier(_ __theValue: UnsafeMutablePointer<Int32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicDecrement32Barrier")
    return ilk_osatomic_decrement32_barrier(__theValue)
}

/// Atomically adds `__theAmount` to `*__theValue`, without a barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd64(_ __theAmount: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!)
    -> Int64
{
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicAdd64")
    return ilk_osatomic_add64(__theAmount, __theValue)
}

/// Atomically adds 1 to `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement64(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicIncrement64")
    return ilk_osatomic_increment64(__theValue)
}

/// Atomically subtracts 1 from `*__theValue`, without a barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement64(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicDecrement64")
    return ilk_osatomic_decrement64(__theValue)
}

/// Atomically adds `__theAmount` to `*__theValue`, with a full barrier.
/// - Returns: The new value (wrapping on overflow).
@inlinable
public func OSAtomicAdd64Barrier(_ __theAmount: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!)
    -> Int64
{
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicAdd64Barrier")
    return ilk_osatomic_add64_barrier(__theAmount, __theValue)
}

/// Atomically adds 1 to `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicIncrement64Barrier(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicIncrement64Barrier")
    return ilk_osatomic_increment64_barrier(__theValue)
}

/// Atomically subtracts 1 from `*__theValue`, with a full barrier.
/// - Returns: The new value.
@inlinable
public func OSAtomicDecrement64Barrier(_ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!) -> Int64 {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicDecrement64Barrier")
    return ilk_osatomic_decrement64_barrier(__theValue)
}

// MARK: - Bitwise (32-bit only, as on Darwin)

/// Atomically ORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32")
    return Int32(bitPattern: ilk_atomic_or_fetch_u32(__theValue, __theMask, ILK_ORDER_RELAXED))
}

/// Atomically ORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32Barrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32Barrier")
    return Int32(bitPattern: ilk_atomic_or_fetch_u32(__theValue, __theMask, ILK_ORDER_SEQ_CST))
}

/// Atomically ORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32Orig(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32Orig")
    return Int32(bitPattern: ilk_atomic_fetch_or_u32(__theValue, __theMask, ILK_ORDER_RELAXED))
}

/// Atomically ORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicOr32OrigBarrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicOr32OrigBarrier")
    return Int32(bitPattern: ilk_atomic_fetch_or_u32(__theValue, __theMask, ILK_ORDER_SEQ_CST))
}

/// Atomically ANDs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32")
    return Int32(bitPattern: ilk_atomic_and_fetch_u32(__theValue, __theMask, ILK_ORDER_RELAXED))
}

/// Atomically ANDs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32Barrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32Barrier")
    return Int32(bitPattern: ilk_atomic_and_fetch_u32(__theValue, __theMask, ILK_ORDER_SEQ_CST))
}

/// Atomically ANDs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32Orig(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32Orig")
    return Int32(bitPattern: ilk_atomic_fetch_and_u32(__theValue, __theMask, ILK_ORDER_RELAXED))
}

/// Atomically ANDs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicAnd32OrigBarrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicAnd32OrigBarrier")
    return Int32(bitPattern: ilk_atomic_fetch_and_u32(__theValue, __theMask, ILK_ORDER_SEQ_CST))
}

/// Atomically XORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32")
    return Int32(bitPattern: ilk_atomic_xor_fetch_u32(__theValue, __theMask, ILK_ORDER_RELAXED))
}

/// Atomically XORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The new value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32Barrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32Barrier")
    return Int32(bitPattern: ilk_atomic_xor_fetch_u32(__theValue, __theMask, ILK_ORDER_SEQ_CST))
}

/// Atomically XORs `__theMask` into `*__theValue`, without a barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32Orig(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32Orig")
    return Int32(bitPattern: ilk_atomic_fetch_xor_u32(__theValue, __theMask, ILK_ORDER_RELAXED))
}

/// Atomically XORs `__theMask` into `*__theValue`, with a full barrier.
/// - Returns: The original value, as Darwin returns it: its bits as an `Int32`.
@inlinable
public func OSAtomicXor32OrigBarrier(_ __theMask: UInt32, _ __theValue: UnsafeMutablePointer<UInt32>!) -> Int32 {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicXor32OrigBarrier")
    return Int32(bitPattern: ilk_atomic_fetch_xor_u32(__theValue, __theMask, ILK_ORDER_SEQ_CST))
}

// MARK: - Compare and swap

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap32(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwap32")
    return ilk_osatomic_cas32(__oldValue, __newValue, __theValue)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap32Barrier(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwap32Barrier")
    return ilk_osatomic_cas32_barrier(__oldValue, __newValue, __theValue)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap64(
    _ __oldValue: Int64, _ __newValue: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicCompareAndSwap64")
    return ilk_osatomic_cas64(__oldValue, __newValue, __theValue)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwap64Barrier(
    _ __oldValue: Int64, _ __newValue: Int64, _ __theValue: UnsafeMutablePointer<OSAtomic_int64_aligned64_t>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 8, "OSAtomicCompareAndSwap64Barrier")
    return ilk_osatomic_cas64_barrier(__oldValue, __newValue, __theValue)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapInt(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwapInt")
    return ilk_osatomic_cas32(__oldValue, __newValue, __theValue)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapIntBarrier(
    _ __oldValue: Int32, _ __newValue: Int32, _ __theValue: UnsafeMutablePointer<Int32>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, 4, "OSAtomicCompareAndSwapIntBarrier")
    return ilk_osatomic_cas32_barrier(__oldValue, __newValue, __theValue)
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, without a barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapLong(_ __oldValue: Int, _ __newValue: Int, _ __theValue: UnsafeMutablePointer<Int>!)
    -> Bool
{
    _osAtomicCheckAligned(__theValue, UInt(MemoryLayout<Int>.alignment), "OSAtomicCompareAndSwapLong")
    // Relaxed or sequentially consistent on both outcomes, as the C shim's CAS forms.
    return ilk_atomic_cas_value_iptr(__theValue, __oldValue, __newValue, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
        == __oldValue
}

/// Atomically replaces `*__theValue` with `__newValue` if it equals `__oldValue`, with a full barrier.
/// - Returns: `true` when the value was swapped.
@inlinable
public func OSAtomicCompareAndSwapLongBarrier(
    _ __oldValue: Int, _ __newValue: Int, _ __theValue: UnsafeMutablePointer<Int>!
) -> Bool {
    _osAtomicCheckAligned(__theValue, UInt(MemoryLayout<Int>.alignment), "OSAtomicCompareAndSwapLongBarrier")
    // Relaxed or sequentially consistent on both outcomes, as the C shim's CAS forms.
    return ilk_atomic_cas_value_iptr(__theValue, __oldValue, __newValue, ILK_ORDER_SEQ_CST, ILK_ORDER_SEQ_CST)
        == __oldValue
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
    return ilk_osatomic_casptr(__oldValue, __newValue, __theValue)
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
    return ilk_osatomic_casptr_barrier(__oldValue, __newValue, __theValue)
}

// MARK: - Bit test and set/clear

/// Atomically sets bit `__n` of the bytes at `__theAddress`, without a barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndSet(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    ilk_osatomic_test_and_set(__n, __theAddress)
}

/// Atomically sets bit `__n` of the bytes at `__theAddress`, with a full barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndSetBarrier(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    ilk_osatomic_test_and_set_barrier(__n, __theAddress)
}

/// Atomically clears bit `__n` of the bytes at `__theAddress`, without a barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndClear(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    ilk_osatomic_test_and_clear(__n, __theAddress)
}

/// Atomically clears bit `__n` of the bytes at `__theAddress`, with a full barrier.
///
/// OSAtomic's bit numbering: bit `n` is the bit with value `0x80 >> (n % 8)` of the byte
/// `__theAddress + n / 8` (bit 0 is the most significant bit of the first byte).
/// - Returns: The original value of the bit.
@inlinable
public func OSAtomicTestAndClearBarrier(_ __n: UInt32, _ __theAddress: UnsafeMutableRawPointer!) -> Bool {
    ilk_osatomic_test_and_clear_barrier(__n, __theAddress)
}

// MARK: - Barrier

/// A full memory barrier: every memory access before it is ordered before every access after
/// it (a sequentially consistent fence).
@inlinable
public func OSMemoryBarrier() {
    ilk_fence_full()
}
