// Atomics under contention from real OS threads released together: nothing is lost,
// duplicated or torn. Every test checks an exact final value, and most also check what each
// operation returned (the NEW values of increments are exactly 1...N, each once).
// Sizes shrink under ThreadSanitizer (TestScale).

import Interlock
import Testing

private let threadCount = 4
private let iterations = TestScale.count(50_000, small: 1_000)

/// Per-thread result slots, each written by its own thread only and read after all are
/// joined. The slots are separate memory locations (not elements of one Swift Array, whose
/// subscript setter would be an access to the whole array from every thread).
private final class PerThread<T>: @unchecked Sendable {
    private let base: UnsafeMutablePointer<[T]>
    let count: Int
    init(_ count: Int) {
        self.count = count
        base = .allocate(capacity: count)
        base.initialize(repeating: [], count: count)
    }
    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }
    subscript(thread: Int) -> [T] {
        get { base[thread] }
        set { base[thread] = newValue }
    }
    var all: [[T]] { Array(UnsafeBufferPointer(start: base, count: count)) }
}

/// A plain, unsynchronized counter: only the lock under test makes its accesses safe.
private final class PlainCounter: @unchecked Sendable {
    var value = 0
}

@Suite("Atomics under contention: exact totals")
struct AtomicConcurrencyTests {
    @Test(
        "concurrent increments lose nothing; their results are 1...N once each",
        arguments: AtomicIntegerKind.allCases)
    func increments(kind: AtomicIntegerKind) {
        kind.run(ConcurrentIncrements())
    }

    @Test(
        "concurrent add and subtract balance out; decrements reach exactly zero",
        arguments: AtomicIntegerKind.allCases)
    func addSubtract(kind: AtomicIntegerKind) {
        kind.run(ConcurrentAddSubtract())
    }

    @Test("compare-and-swap loops lose no update", arguments: AtomicIntegerKind.allCases)
    func compareAndSwapLoops(kind: AtomicIntegerKind) {
        kind.run(ConcurrentCompareAndSwap())
    }

    @Test("concurrent bitwise or/and/xor give exact final values", arguments: AtomicIntegerKind.allCases)
    func bitwise(kind: AtomicIntegerKind) {
        kind.run(ConcurrentBitwise())
    }

    @Test("each bit is won by exactly one racing testAndSet", arguments: AtomicIntegerKind.allCases)
    func testAndSetRace(kind: AtomicIntegerKind) {
        kind.run(ConcurrentTestAndSet())
    }

    @Test("exchange hands every value on exactly once")
    func exchangeChain() {
        let a = AtomicInt64(-1)
        let seen = PerThread<Int64>(threadCount)
        runConcurrently(threadCount: threadCount) { t in
            var mine: [Int64] = []
            mine.reserveCapacity(iterations)
            for i in 0..<iterations {
                mine.append(a.exchange(Int64(t * iterations + i)))
            }
            seen[t] = mine
        }
        // Every value put in comes out once: by a later exchange, or as the final value.
        let out = (seen.all.joined() + [a.load()]).sorted()
        let into = [-1] + (0..<Int64(threadCount * iterations)).map { $0 }
        #expect(out == into)
    }

    @Test("AtomicBool as a test-and-set lock: exchange(.acquire)/store(.release) guard plain memory")
    func boolLock() {
        let locked = AtomicBool(false)
        let counter = PlainCounter()
        let rounds = TestScale.count(2_000, small: 300)
        runConcurrently(threadCount: threadCount) { t in
            for i in 0..<rounds {
                if (t + i) % 2 == 0 {
                    // Pairs with the release store of the previous holder.
                    spinUntil { locked.exchange(true, ordering: .acquire) == false }
                } else {
                    spinUntil { locked.compareExchange(expected: false, desired: true, ordering: .acquire).exchanged }
                }
                counter.value += 1  // plain: a race here is a TSan report and a lost update
                locked.store(false, ordering: .release)  // publishes the update to the next holder
            }
        }
        #expect(counter.value == threadCount * rounds)
        #expect(locked.load() == false)
    }

    @Test("atomicTestAndSet on shared raw memory: each bit won once, buffer all ones")
    func rawBitRace() {
        let byteCount = TestScale.count(4_096, small: 256)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        let address = UInt(bitPattern: buffer)
        let wins = AtomicInt(0)
        runConcurrently(threadCount: threadCount) { t in
            let base = UnsafeMutableRawPointer(bitPattern: address)!
            var won = 0
            // Each thread walks the bits from a different start so they collide everywhere.
            for k in 0..<(byteCount * 8) {
                let bit = (k + t * byteCount * 2) % (byteCount * 8)
                if !atomicTestAndSet(bit, base) { won += 1 }
            }
            wins.add(won)
        }
        #expect(wins.load() == byteCount * 8)
        let bytes = UnsafeRawBufferPointer(start: buffer, count: byteCount)
        #expect(bytes.allSatisfy { $0 == 0xFF })
    }
}

// MARK: - The checks, generic over the value type

private struct ConcurrentIncrements: AtomicIntegerCheck {
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(0)
        let results = PerThread<V>(threadCount)
        runConcurrently(threadCount: threadCount) { t in
            var mine: [V] = []
            mine.reserveCapacity(iterations)
            for _ in 0..<iterations { mine.append(a.increment()) }
            results[t] = mine
        }
        let total = threadCount * iterations
        #expect(a.load() == V(total), "\(V.self): \(threadCount) × \(iterations) increments")
        let returned = results.all.joined().map { Int($0) }.sorted()
        #expect(returned == Array(1...total), "\(V.self): every new value returned exactly once")
        // Each thread saw its own results strictly increase.
        for mine in results.all {
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0 < $1 })
        }
    }
}

private struct ConcurrentAddSubtract: AtomicIntegerCheck {
    func run<V: AtomicIntegerValue>(_: V.Type) {
        // Start near the top so that signed values wrap through max/min while they race.
        let start = V.max &- 3
        let a = AtomicInteger<V>(start)
        runConcurrently(threadCount: threadCount) { t in
            for i in 0..<iterations {
                let delta = V(truncatingIfNeeded: i % 7 + 1)
                if t % 2 == 0 {
                    a.add(delta, ordering: .relaxed)  // only the total matters; join orders it
                } else {
                    a.subtract(delta, ordering: .relaxed)
                }
            }
        }
        #expect(a.load() == start, "\(V.self): as many adds as subtracts of the same deltas")

        let b = AtomicInteger<V>(V(threadCount * iterations))
        let reachedZero = AtomicInt(0)
        runConcurrently(threadCount: threadCount) { _ in
            for _ in 0..<iterations where b.decrement(ordering: .acquireRelease) == 0 {
                reachedZero.increment()
            }
        }
        #expect(b.load() == 0)
        #expect(reachedZero.load() == 1, "\(V.self): exactly one decrement returned 0")
    }
}

private struct ConcurrentCompareAndSwap: AtomicIntegerCheck {
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(0)
        runConcurrently(threadCount: threadCount) { t in
            for _ in 0..<iterations {
                if t % 2 == 0 {
                    var current = a.load(ordering: .relaxed)
                    while true {
                        let (exchanged, found) = a.compareExchange(
                            expected: current, desired: current &+ 1, ordering: .acquireRelease)
                        if exchanged { break }
                        current = found
                    }
                } else {
                    while true {
                        let current = a.load(ordering: .relaxed)
                        if a.compareAndSwap(current, current &+ 1) { break }
                    }
                }
            }
        }
        #expect(a.load() == V(threadCount * iterations), "\(V.self): CAS-loop increments")
    }
}

private struct ConcurrentBitwise: AtomicIntegerCheck {
    func run<V: AtomicIntegerValue>(_: V.Type) {
        // Or/and: each thread owns the bits t, t + threads, t + 2·threads, ... and toggles them
        // on with bitwiseOr and off with bitwiseAnd, ending with them on. No other thread's
        // update may undo its own, and each result shows the thread's own bits as it left them.
        let ownMasks: [V] = (0..<threadCount).map { t in
            stride(from: t, to: V.bitWidth, by: threadCount).reduce(V(0)) { $0 | (1 << $1) }
        }
        let a = AtomicInteger<V>(0)
        let wrong = AtomicInt(0)
        runConcurrently(threadCount: threadCount) { t in
            let mine = ownMasks[t]
            for _ in 0..<iterations {
                if a.bitwiseOr(mine) & mine != mine { wrong.increment() }
                if a.bitwiseAnd(~mine) & mine != 0 { wrong.increment() }
            }
            if a.bitwiseOr(mine) & mine != mine { wrong.increment() }
        }
        #expect(wrong.load() == 0, "\(V.self): every or/and result shows the caller's own bits")
        #expect(a.load() == ~V.zero, "\(V.self): all bits set at the end")

        // Xor: thread t flips its mask (iterations + t) times; odd counts leave it flipped.
        let flips: [V] = (0..<threadCount).map { V.pattern.rotated(by: $0) }
        let x = AtomicInteger<V>(V.otherPattern)
        runConcurrently(threadCount: threadCount) { t in
            for _ in 0..<(iterations + t) { x.bitwiseXor(flips[t], ordering: .relaxed) }
        }
        var expected = V.otherPattern
        for t in 0..<threadCount where (iterations + t) % 2 == 1 { expected ^= flips[t] }
        #expect(x.load() == expected, "\(V.self): xor of every odd-count mask")
    }
}

private struct ConcurrentTestAndSet: AtomicIntegerCheck {
    func run<V: AtomicIntegerValue>(_: V.Type) {
        // Many words, every thread racing for every bit of each: exactly one wins each bit.
        let words = (0..<TestScale.count(2_000, small: 50)).map { _ in AtomicInteger<V>(0) }
        let wins = AtomicInt(0)
        runConcurrently(threadCount: threadCount) { t in
            var won = 0
            for word in words {
                for k in 0..<V.bitWidth where !word.testAndSet(bit: (k + t * 5) % V.bitWidth) {
                    won += 1
                }
            }
            wins.add(won)
        }
        #expect(wins.load() == words.count * V.bitWidth, "\(V.self): each bit won exactly once")
        #expect(words.allSatisfy { $0.load() == ~V.zero })

        // And back: exactly one racing testAndClear sees each bit set.
        let clears = AtomicInt(0)
        runConcurrently(threadCount: threadCount) { t in
            var won = 0
            for word in words {
                for k in 0..<V.bitWidth where word.testAndClear(bit: (k + t * 3) % V.bitWidth) {
                    won += 1
                }
            }
            clears.add(won)
        }
        #expect(clears.load() == words.count * V.bitWidth)
        #expect(words.allSatisfy { $0.load() == 0 })
    }
}

extension FixedWidthInteger {
    /// The bits rotated left by `count`.
    fileprivate func rotated(by count: Int) -> Self {
        let n = count % Self.bitWidth
        if n == 0 { return self }
        let unsigned = Magnitude(truncatingIfNeeded: self)
        return Self(truncatingIfNeeded: (unsigned << n) | (unsigned >> (Self.bitWidth - n)))
    }
}
