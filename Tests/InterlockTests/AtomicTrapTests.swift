// Programmer errors trap with a message naming the primitive and the mistake. Each case runs
// in a child process (a Swift Testing exit test), which must exit with a failure, and its
// standard error must carry the message.

import Interlock
import Testing

@Suite("Atomics: misuse traps with a message")
struct AtomicTrapTests {
    @Test("AtomicInt32 load with .release traps")
    func loadRelease() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AtomicInt32(1).load(ordering: .release)
        }
        expectTrapMessage(
            result, contains: "AtomicInt32.load(ordering:)",
            ".release is not a valid ordering for a load")
    }

    @Test("AtomicInt64 load with .acquireRelease traps")
    func loadAcquireRelease() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AtomicInt64(1).load(ordering: .acquireRelease)
        }
        expectTrapMessage(
            result, contains: "AtomicInt64.load(ordering:)",
            ".acquireRelease is not a valid ordering for a load")
    }

    @Test("AtomicUInt32 store with .acquire traps")
    func storeAcquire() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            AtomicUInt32(1).store(2, ordering: .acquire)
        }
        expectTrapMessage(
            result, contains: "AtomicUInt32.store(_:ordering:)",
            ".acquire is not a valid ordering for a store")
    }

    @Test("AtomicInt store with .acquireRelease traps")
    func storeAcquireRelease() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            AtomicInt(1).store(2, ordering: .acquireRelease)
        }
        expectTrapMessage(
            result, contains: "AtomicInt.store(_:ordering:)",
            ".acquireRelease is not a valid ordering for a store")
    }

    @Test("AtomicInt32 testAndSet(bit: -1) traps")
    func testAndSetNegative() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AtomicInt32().testAndSet(bit: -1)
        }
        expectTrapMessage(
            result, contains: "AtomicInt32.testAndSet(bit:ordering:)",
            "bit index -1 is out of range 0..<32")
    }

    @Test("AtomicInt32 testAndSet(bit: 32) traps")
    func testAndSetTooHigh() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AtomicInt32().testAndSet(bit: 32)
        }
        expectTrapMessage(
            result, contains: "AtomicInt32.testAndSet(bit:ordering:)",
            "bit index 32 is out of range 0..<32")
    }

    @Test("AtomicUInt64 testAndClear(bit: 64) traps")
    func testAndClearTooHigh() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AtomicUInt64(.max).testAndClear(bit: 64)
        }
        expectTrapMessage(
            result, contains: "AtomicUInt64.testAndClear(bit:ordering:)",
            "bit index 64 is out of range 0..<64")
    }

    @Test("AtomicBool load with .release traps")
    func boolLoadRelease() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AtomicBool(true).load(ordering: .release)
        }
        expectTrapMessage(
            result, contains: "AtomicBool.load(ordering:)",
            ".release is not a valid ordering for a load")
    }

    @Test("AtomicBool store with .acquire traps")
    func boolStoreAcquire() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            AtomicBool().store(true, ordering: .acquire)
        }
        expectTrapMessage(
            result, contains: "AtomicBool.store(_:ordering:)",
            ".acquire is not a valid ordering for a store")
    }

    @Test("atomicTestAndSet(-1, p) traps")
    func rawTestAndSetNegative() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var word: UInt64 = 0
            _ = withUnsafeMutableBytes(of: &word) { atomicTestAndSet(-1, $0.baseAddress!) }
        }
        expectTrapMessage(result, contains: "atomicTestAndSet(_:_:ordering:)", "bit index -1 is negative")
    }

    @Test("atomicTestAndClear(-8, p) traps")
    func rawTestAndClearNegative() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var word: UInt64 = 0
            _ = withUnsafeMutableBytes(of: &word) { atomicTestAndClear(-8, $0.baseAddress!) }
        }
        expectTrapMessage(result, contains: "atomicTestAndClear(_:_:ordering:)", "bit index -8 is negative")
    }
}
