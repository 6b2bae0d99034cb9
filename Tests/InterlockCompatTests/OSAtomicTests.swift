// OSAtomic: every function's value and return convention (new value, original value, swapped
// or not, the bit's old value), the Threading Programming Guide's Listing 4-1 bit operations,
// the OSAtomic documentation's lazily allocated shared buffer raced from several threads, a
// counter incremented from several threads, and the misaligned-pointer traps (32-bit, 64-bit and
// pointer operands).

import CInterlock
import InterlockCompat
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("OSAtomic")
struct OSAtomicTests {
    @Test("Add, Increment and Decrement return the new value (32-bit)")
    func arithmetic32() {
        var value: Int32 = 10
        #expect(OSAtomicAdd32(5, &value) == 15 && value == 15)
        #expect(OSAtomicAdd32Barrier(-20, &value) == -5 && value == -5)
        #expect(OSAtomicIncrement32(&value) == -4 && value == -4)
        #expect(OSAtomicIncrement32Barrier(&value) == -3 && value == -3)
        #expect(OSAtomicDecrement32(&value) == -4 && value == -4)
        #expect(OSAtomicDecrement32Barrier(&value) == -5 && value == -5)
        value = .max
        #expect(OSAtomicIncrement32(&value) == .min)  // wraps, as the C function does
    }

    @Test("Add, Increment and Decrement return the new value (64-bit)")
    func arithmetic64() {
        var value: Int64 = 1 << 40
        #expect(OSAtomicAdd64(5, &value) == (1 << 40) + 5 && value == (1 << 40) + 5)
        #expect(OSAtomicAdd64Barrier(-(1 << 40), &value) == 5 && value == 5)
        #expect(OSAtomicIncrement64(&value) == 6 && value == 6)
        #expect(OSAtomicIncrement64Barrier(&value) == 7 && value == 7)
        #expect(OSAtomicDecrement64(&value) == 6 && value == 6)
        #expect(OSAtomicDecrement64Barrier(&value) == 5 && value == 5)
        value = .min
        #expect(OSAtomicDecrement64Barrier(&value) == .max)
    }

    @Test("Or, And, Xor return the new value; the Orig forms the original; both as Int32")
    func bitwise() {
        typealias Op = (UInt32, UnsafeMutablePointer<UInt32>?) -> Int32
        let start: UInt32 = 0x8000_000A
        let mask: UInt32 = 0x0000_0006
        let cases: [(String, Op, UInt32, Bool)] = [
            ("Or32", OSAtomicOr32, start | mask, false),
            ("Or32Barrier", OSAtomicOr32Barrier, start | mask, false),
            ("Or32Orig", OSAtomicOr32Orig, start | mask, true),
            ("Or32OrigBarrier", OSAtomicOr32OrigBarrier, start | mask, true),
            ("And32", OSAtomicAnd32, start & mask, false),
            ("And32Barrier", OSAtomicAnd32Barrier, start & mask, false),
            ("And32Orig", OSAtomicAnd32Orig, start & mask, true),
            ("And32OrigBarrier", OSAtomicAnd32OrigBarrier, start & mask, true),
            ("Xor32", OSAtomicXor32, start ^ mask, false),
            ("Xor32Barrier", OSAtomicXor32Barrier, start ^ mask, false),
            ("Xor32Orig", OSAtomicXor32Orig, start ^ mask, true),
            ("Xor32OrigBarrier", OSAtomicXor32OrigBarrier, start ^ mask, true),
        ]
        for (name, op, expected, returnsOriginal) in cases {
            var value = start
            let returned = op(mask, &value)
            #expect(value == expected, "\(name): stored value")
            let wanted = Int32(bitPattern: returnsOriginal ? start : expected)
            #expect(returned == wanted, "\(name): returned value")
        }
    }

    @Test("CompareAndSwap swaps only on a match and says whether it did")
    func compareAndSwap() {
        var v32: Int32 = 1
        #expect(!OSAtomicCompareAndSwap32(2, 3, &v32) && v32 == 1)
        #expect(OSAtomicCompareAndSwap32(1, 3, &v32) && v32 == 3)
        #expect(!OSAtomicCompareAndSwap32Barrier(1, 4, &v32) && v32 == 3)
        #expect(OSAtomicCompareAndSwap32Barrier(3, 4, &v32) && v32 == 4)
        #expect(!OSAtomicCompareAndSwapInt(0, 5, &v32) && v32 == 4)
        #expect(OSAtomicCompareAndSwapInt(4, 5, &v32) && v32 == 5)
        #expect(!OSAtomicCompareAndSwapIntBarrier(4, 6, &v32) && v32 == 5)
        #expect(OSAtomicCompareAndSwapIntBarrier(5, 6, &v32) && v32 == 6)

        var v64: Int64 = 1 << 33
        #expect(!OSAtomicCompareAndSwap64(1, 2, &v64) && v64 == 1 << 33)
        #expect(OSAtomicCompareAndSwap64(1 << 33, 1 << 34, &v64) && v64 == 1 << 34)
        #expect(!OSAtomicCompareAndSwap64Barrier(1 << 33, 1, &v64) && v64 == 1 << 34)
        #expect(OSAtomicCompareAndSwap64Barrier(1 << 34, -1, &v64) && v64 == -1)

        var long = Int.max
        #expect(!OSAtomicCompareAndSwapLong(0, 1, &long) && long == .max)
        #expect(OSAtomicCompareAndSwapLong(.max, .min, &long) && long == .min)
        #expect(!OSAtomicCompareAndSwapLongBarrier(.max, 0, &long) && long == .min)
        #expect(OSAtomicCompareAndSwapLongBarrier(.min, 7, &long) && long == 7)

        let a = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        let b = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        defer {
            a.deallocate()
            b.deallocate()
        }
        var slot: UnsafeMutableRawPointer? = nil
        #expect(!OSAtomicCompareAndSwapPtr(a, b, &slot) && slot == nil)
        #expect(OSAtomicCompareAndSwapPtr(nil, a, &slot) && slot == a)
        #expect(!OSAtomicCompareAndSwapPtrBarrier(nil, b, &slot) && slot == a)
        #expect(OSAtomicCompareAndSwapPtrBarrier(a, b, &slot) && slot == b)
        #expect(OSAtomicCompareAndSwapPtrBarrier(b, nil, &slot) && slot == nil)
    }

    @Test("Threading Programming Guide, Listing 4-1: bit operations on a 32-bit value")
    func listing4_1() {
        var theValue: Int32 = 0
        #expect(!OSAtomicTestAndSet(0, &theValue))
        #expect(theValue == 128)

        theValue = 0
        #expect(!OSAtomicTestAndSet(7, &theValue))
        #expect(theValue == 1)

        theValue = 0
        #expect(!OSAtomicTestAndSet(15, &theValue))
        #expect(theValue == 256)

        #expect(OSAtomicCompareAndSwap32(256, 512, &theValue))
        #expect(theValue == 512)

        #expect(!OSAtomicCompareAndSwap32(256, 1024, &theValue))
        #expect(theValue == 512)
    }

    @Test("TestAndSet and TestAndClear on a 64-bit value: OSAtomic's bit numbering and old bits")
    func testAndSetClear64() {
        // Bit n is the bit 0x80 >> (n % 8) of byte n / 8 (little-endian: byte k holds value bits
        // 8k ... 8k+7), so bit n has the value 1 << (8 * (n / 8) + 7 - n % 8).
        for n: UInt32 in [0, 7, 8, 15, 31, 32, 56, 63] {
            let expected = UInt64(1) << (8 * (n / 8) + 7 - n % 8)
            var value: UInt64 = 0
            #expect(!OSAtomicTestAndSet(n, &value), "bit \(n) was clear")
            #expect(value == expected, "bit \(n) set")
            #expect(OSAtomicTestAndSetBarrier(n, &value), "bit \(n) was already set")
            #expect(value == expected)
            #expect(OSAtomicTestAndClear(n, &value), "bit \(n) was set")
            #expect(value == 0, "bit \(n) cleared")
            #expect(!OSAtomicTestAndClearBarrier(n, &value), "bit \(n) was already clear")
            #expect(value == 0)
        }
        // Other bits are left alone.
        var value = UInt64.max
        #expect(OSAtomicTestAndClear(63, &value))
        #expect(value == UInt64.max & ~(UInt64(1) << 56))
        #expect(!OSAtomicTestAndSet(63, &value))
        #expect(value == .max)
    }

    @Test("OSMemoryBarrier: a full fence, so two threads never both miss each other's store")
    func memoryBarrier() {
        // Store buffering (Dekker): each thread stores its word (relaxed), calls OSMemoryBarrier,
        // loads the other's (relaxed). Only a full fence forbids both reading 0; without one,
        // x86-64 lets it happen within a few thousand rounds (AtomicFenceTests' control).
        let rounds = 20_000
        nonisolated(unsafe) let words = UnsafeMutablePointer<UInt32>.allocate(capacity: 2 * rounds)
        nonisolated(unsafe) let seen = UnsafeMutablePointer<UInt32>.allocate(capacity: 2 * rounds)
        nonisolated(unsafe) let arrived = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        words.initialize(repeating: 0, count: 2 * rounds)
        seen.initialize(repeating: 0, count: 2 * rounds)
        arrived.initialize(to: 0)
        defer {
            words.deallocate()
            seen.deallocate()
            arrived.deallocate()
        }
        compatRunThreads(2) { me in
            for round in 0..<rounds {
                // A counter barrier per round, so both threads start the round together.
                _ = ilk_atomic_fetch_add_u32(arrived, 1, ILK_ORDER_ACQ_REL)
                while ilk_atomic_load_u32(arrived, ILK_ORDER_ACQUIRE) < UInt32(2 * (round + 1)) { ilk_spin_pause() }
                // Relaxed: the accesses under test; only OSMemoryBarrier orders them.
                ilk_atomic_store_u32(words + 2 * round + me, 1, ILK_ORDER_RELAXED)
                OSMemoryBarrier()
                seen[2 * round + me] = ilk_atomic_load_u32(words + 2 * round + (1 - me), ILK_ORDER_RELAXED)
            }
        }
        let bothMissed = (0..<rounds).filter { seen[2 * $0] == 0 && seen[2 * $0 + 1] == 0 }.count
        #expect(bothMissed == 0, "in \(bothMissed) of \(rounds) rounds both threads read 0")
    }

    @Test("the lazily allocated shared buffer: one winner, every loser frees its buffer")
    func lazySharedBuffer() {
        // The OSAtomic documentation's example, raced from 8 threads, 200 rounds:
        //   if (buffer == NULL) {
        //       void *newBuffer = calloc(1, 1024);
        //       if (!OSAtomicCompareAndSwapPtrBarrier(NULL, newBuffer, &buffer)) free(newBuffer);
        //   }
        //   return buffer;
        let threads = 8
        for _ in 0..<200 {
            let slot = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
            slot.initialize(to: nil)
            let seen = UnsafeMutablePointer<UInt>.allocate(capacity: threads)
            let counters = UnsafeMutablePointer<Int32>.allocate(capacity: 2)  // allocated, freed
            counters.initialize(repeating: 0, count: 2)
            nonisolated(unsafe) let (s, r, c) = (slot, seen, counters)
            compatRunThreads(threads) { index in
                var buffer = lazyRead(s)
                if buffer == nil {
                    let newBuffer = calloc(1, 1024)
                    _ = OSAtomicIncrement32Barrier(c)
                    if !OSAtomicCompareAndSwapPtrBarrier(nil, newBuffer, s) {
                        free(newBuffer)
                        _ = OSAtomicIncrement32Barrier(c + 1)
                    }
                    buffer = lazyRead(s)
                }
                r[index] = UInt(bitPattern: buffer)
            }
            let winner = UInt(bitPattern: slot.pointee)
            #expect(winner != 0)
            #expect((0..<threads).allSatisfy { seen[$0] == winner }, "every thread returned the one buffer")
            #expect(counters[0] >= 1 && counters[1] == counters[0] - 1, "every loser freed its buffer")
            free(slot.pointee)
            slot.deallocate()
            seen.deallocate()
            counters.deallocate()
        }
    }

    @Test("Increment32Barrier and Add64 from 4 threads lose no update")
    func concurrentCounters() {
        let counter32 = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        let counter64 = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
        counter32.initialize(to: 0)
        counter64.initialize(to: 0)
        defer {
            counter32.deallocate()
            counter64.deallocate()
        }
        nonisolated(unsafe) let (c32, c64) = (counter32, counter64)
        compatRunThreads(4) { _ in
            for _ in 0..<50_000 {
                _ = OSAtomicIncrement32Barrier(c32)
                _ = OSAtomicAdd64(3, c64)
            }
        }
        #expect(counter32.pointee == 200_000)
        #expect(counter64.pointee == 600_000)
    }

    @Test("a misaligned operand traps, naming the function")
    func misalignedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let raw = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
            _ = OSAtomicAdd32(1, (raw + 1).assumingMemoryBound(to: Int32.self))
        }
        compatExpectStderr(result, contains: "OSAtomicAdd32: the address")
        compatExpectStderr(result, contains: "is not aligned to 4 bytes")
    }

    /// Proves that a 64-bit operand aligned to 4 bytes only (which x86-64 would accept, maybe
    /// tearing across a cache line) traps, naming OSAtomicAdd64 and the 8-byte requirement.
    @Test("OSAtomicAdd64 on an operand misaligned by 4 traps, naming the function")
    func misalignedAdd64Traps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let raw = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
            raw.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
            _ = OSAtomicAdd64(1, (raw + 4).assumingMemoryBound(to: Int64.self))
        }
        compatExpectStderr(result, contains: "OSAtomicAdd64: the address 0x")
        compatExpectStderr(result, contains: "is not aligned to 8 bytes")
    }

    /// Proves that a pointer slot aligned to 4 bytes only traps, naming
    /// OSAtomicCompareAndSwapPtrBarrier and the pointer's 8-byte alignment.
    @Test("OSAtomicCompareAndSwapPtrBarrier on a slot misaligned by 4 traps, naming the function")
    func misalignedCompareAndSwapPtrBarrierTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let raw = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
            raw.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
            let slot = (raw + 4).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
            _ = OSAtomicCompareAndSwapPtrBarrier(nil, raw, slot)
        }
        compatExpectStderr(result, contains: "OSAtomicCompareAndSwapPtrBarrier: the address 0x")
        compatExpectStderr(result, contains: "is not aligned to 8 bytes")
    }
}

/// An atomic read of a pointer slot, with OSAtomic alone: adding 0 returns the current value.
private func lazyRead(_ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> UnsafeMutableRawPointer? {
    let bits = slot.withMemoryRebound(to: Int64.self, capacity: 1) { OSAtomicAdd64Barrier(0, $0) }
    return UnsafeMutableRawPointer(bitPattern: Int(bits))
}
