// Tests of Lazy: computed exactly once among many threads, every reader gets the same value
// (an array's one buffer, a String, an Optional that is nil), readers that arrive during the
// computation sleep in the kernel, readers on the inline path see the value's contents, the
// closure is released once the value exists, and the value with the object. The recursion
// trap is in OnceTrapTests.swift.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Lazy")
struct LazyTests {
    @Test("an array value is computed once among 16 threads, and every reader gets the same buffer")
    func arrayComputedOnce() {
        let threads = 16
        let length = 1_000
        for round in 0..<TestScale.count(100, small: 10) {
            let computations = AtomicInt(0)
            let lazy = Lazy<[Int]> {
                computations.increment()
                return (0..<length).map { $0 &* round }
            }
            let buffers = (0..<threads).map { _ in AtomicInt(0) }
            let correct = AtomicInt(0)
            let finished = runConcurrentlyWithinStallLimit(threadCount: threads) { index in
                let value = lazy.value
                if value.count == length && value[length - 1] == (length - 1) &* round { correct.increment() }
                buffers[index].store(value.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) })
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(computations.load() == 1, "round \(round): computed \(computations.load()) times")
            #expect(correct.load() == threads)
            // One computation, one buffer: every reader holds the same storage.
            #expect(Set(buffers.map { $0.load() }).count == 1, "readers got different arrays")
        }
    }

    @Test("a String value is computed once and every reader reads it whole")
    func stringComputedOnce() {
        let threads = 8
        let expected = String(repeating: "Lazy — ünïcödé ", count: 200)
        for _ in 0..<TestScale.count(50, small: 5) {
            let computations = AtomicInt(0)
            let lazy = Lazy<String> {
                computations.increment()
                return String(repeating: "Lazy — ünïcödé ", count: 200)
            }
            let correct = AtomicInt(0)
            let finished = runConcurrentlyWithinStallLimit(threadCount: threads) { _ in
                for _ in 0..<3 where lazy.value == expected { correct.increment() }
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(computations.load() == 1)
            #expect(correct.load() == threads * 3)
        }
    }

    @Test("readers on the inline path see the value's contents without other synchronization")
    func fastPathReadersSeeValue() {
        // As in OnceTests.fastPathCallersSeeEffects: the readers learn through a RELAXED flag
        // that the value exists, so only the acquire of `value`'s inline check orders their
        // reads of the value (and of its plain payload) after the computation.
        for round in 0..<TestScale.count(50, small: 10) {
            let deinits = AtomicInt(0)
            let lazy = Lazy<CountedInstance> { CountedInstance(tag: round, counter: deinits) }
            let announced = AtomicBool(false)
            let correct = AtomicInt(0)
            let readers = 4
            let finished = runConcurrentlyWithinStallLimit(threadCount: readers + 1) { index in
                if index == 0 {
                    _ = lazy.value
                    // Relaxed: deliberately no happens-before edge.
                    announced.store(true, ordering: .relaxed)
                    return
                }
                while !announced.load(ordering: .relaxed) { sched_yield() }
                let value = lazy.value
                if value.tag == round && value.payload == [round, round &* 2, round &* 3] { correct.increment() }
            }
            #expect(finished, "callers still running after \(lockStallLimit): a lost wake-up?")
            guard finished else { return }
            #expect(correct.load() == readers)
        }
    }

    @Test("readers that arrive during the computation sleep in the kernel, then get the value")
    func overlappingReadersSleep() {
        let computations = AtomicInt(0)
        let callers = LockGuarded<OverlappingCallers?>(nil)
        let allAsleep = LockGuarded(false)
        let correct = AtomicInt(0)
        // The closure refers to the object it computes for through a box set before the first read.
        let box = LockGuarded<Lazy<[String]>?>(nil)
        let lazy = Lazy<[String]> {
            computations.increment()
            let overlapping = OverlappingCallers(count: 6) { _ in
                if box.value!.value == ["computed", "once"] { correct.increment() }
            }
            callers.value = overlapping
            allAsleep.value = overlapping.waitUntilAllAsleep()
            return ["computed", "once"]
        }
        box.value = lazy
        let runner = TestThread { _ = lazy.value }
        runner.join()
        #expect(allAsleep.value, "readers overlapping the computation did not all sleep in the kernel")
        let returned = callers.value!.joinAll()
        #expect(returned, "\(6 - callers.value!.returnedCount) sleeping readers were never woken")
        guard returned else { return }
        #expect(computations.load() == 1)
        #expect(correct.load() == 6)
        #expect(lazy.value == ["computed", "once"])
    }

    @Test("the closure and what it captured are released once the value exists")
    func closureReleasedAfterComputing() {
        let released = AtomicInt(0)
        let lazy: Lazy<Int>
        do {
            let captured = CountedInstance(tag: 5, counter: released)
            lazy = Lazy { captured.tag * 2 }
        }
        #expect(released.load() == 0, "the closure's capture was released before the value was computed")
        #expect(lazy.value == 10)
        #expect(released.load() == 1, "the closure's capture outlived the computation")
        #expect(lazy.value == 10)
    }

    @Test("an Optional value that is nil is computed once, and nil is its value")
    func optionalNilValue() {
        let computations = AtomicInt(0)
        let lazy = Lazy<Int?> {
            computations.increment()
            return nil
        }
        #expect(lazy.value == nil)
        #expect(lazy.value == nil)
        #expect(computations.load() == 1)
    }

    @Test("the value is released with the object, and an unread Lazy releases its closure")
    func releasedWithTheObject() {
        let valueDeinits = AtomicInt(0)
        do {
            let lazy = Lazy { CountedInstance(tag: 1, counter: valueDeinits) }
            #expect(lazy.value.tag == 1)
            #expect(valueDeinits.load() == 0)
        }
        #expect(valueDeinits.load() == 1, "the value outlived its Lazy")

        let captureDeinits = AtomicInt(0)
        do {
            let captured = CountedInstance(tag: 2, counter: captureDeinits)
            let unread = Lazy { captured.tag }
            _ = unread
        }
        #expect(captureDeinits.load() == 1, "an unread Lazy leaked its closure")
    }
}
