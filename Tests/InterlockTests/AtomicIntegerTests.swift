// Every operation of every atomic integer type (AtomicInt32, AtomicInt64, AtomicInt,
// AtomicUInt32, AtomicUInt64, AtomicUInt), single-threaded: the documented return conventions
// (arithmetic and bitwise operations return the NEW value, exchange the old one,
// compareExchange (exchanged, original), compareAndSwap a Bool, testAndSet/testAndClear the
// old bit with bit 0 the least significant), every ordering valid for each operation, and
// wrap-around on overflow. Each test runs over every type × every valid ordering.

import Interlock
import Testing

@Suite("Atomic integers: operations, return conventions, orderings")
struct AtomicIntegerTests {
    @Test("init(_:) and load(ordering:)", arguments: AtomicIntegerKind.allCases, loadOrders)
    func initAndLoad(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(InitAndLoad(order: order))
    }

    @Test("store(_:ordering:) is seen by the next load", arguments: AtomicIntegerKind.allCases, storeOrders)
    func store(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(Store(order: order))
    }

    @Test("exchange returns the OLD value", arguments: AtomicIntegerKind.allCases, allOrders)
    func exchange(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(Exchange(order: order))
    }

    @Test(
        "compareExchange returns (exchanged, original); compareAndSwap a Bool",
        arguments: AtomicIntegerKind.allCases, allOrders)
    func compareExchange(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(CompareExchange(order: order))
    }

    @Test(
        "add, subtract, increment, decrement return the NEW value",
        arguments: AtomicIntegerKind.allCases, allOrders)
    func arithmetic(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(Arithmetic(order: order))
    }

    @Test(
        "bitwiseOr, bitwiseAnd, bitwiseXor return the NEW value",
        arguments: AtomicIntegerKind.allCases, allOrders)
    func bitwise(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(Bitwise(order: order))
    }

    @Test("arithmetic wraps on overflow, as in C", arguments: AtomicIntegerKind.allCases, allOrders)
    func wrapAround(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(WrapAround(order: order))
    }

    @Test(
        "testAndSet/testAndClear on every bit 0..<bitWidth return the old bit",
        arguments: AtomicIntegerKind.allCases, allOrders)
    func testAndSetAndClear(kind: AtomicIntegerKind, order: MemoryOrder) {
        kind.run(TestAndSetAndClear(order: order))
    }

    @Test("every ordering parameter defaults to a working call")
    func defaults() {
        let a = AtomicInt32()
        #expect(a.load() == 0)
        a.store(3)
        #expect(a.exchange(4) == 3)
        #expect(a.compareExchange(expected: 4, desired: 5) == (true, 4))
        #expect(a.compareAndSwap(5, 6))
        #expect(a.add(2) == 8)
        #expect(a.subtract(3) == 5)
        #expect(a.increment() == 6)
        #expect(a.decrement() == 5)
        #expect(a.bitwiseOr(0b1010) == 0b1111)
        #expect(a.bitwiseAnd(0b0110) == 0b0110)
        #expect(a.bitwiseXor(0b0011) == 0b0101)
        #expect(a.testAndSet(bit: 1) == false)
        #expect(a.testAndClear(bit: 0) == true)
        #expect(a.load() == 0b0110)
    }

    @Test("named overflow cases: Int32.max + 1, UInt64 0 - 1, and relatives")
    func namedOverflows() {
        #expect(AtomicInt32(.max).add(1) == .min)
        #expect(AtomicInt32(.max).increment() == Int32.min)
        #expect(AtomicInt32(.min).decrement() == Int32.max)
        #expect(AtomicInt64(.max).increment() == Int64.min)
        #expect(AtomicInt64(.min).subtract(1) == Int64.max)
        #expect(AtomicInt(.max).add(1) == Int.min)
        #expect(AtomicUInt32(.max).increment() == 0)
        #expect(AtomicUInt32(0).decrement() == UInt32.max)
        #expect(AtomicUInt64(0).subtract(1) == UInt64.max)
        #expect(AtomicUInt64(.max).add(2) == 1)
        #expect(AtomicUInt(0).decrement() == UInt.max)
        let a = AtomicInt32(.max)
        a.increment()
        #expect(a.load() == Int32.min, "the stored value wraps too, not only the returned one")
    }
}

// MARK: - The checks, generic over the value type

private struct InitAndLoad: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        #expect(AtomicInteger<V>().load(ordering: order) == 0, "default value of \(V.self)")
        for value in [0, 1, V.pattern, V.otherPattern, V.min, V.max] {
            #expect(AtomicInteger<V>(value).load(ordering: order) == value)
        }
    }
}

private struct Store: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(V.pattern)
        for value in [V.otherPattern, V.min, V.max, 0, V.pattern] {
            a.store(value, ordering: order)
            #expect(a.load() == value)
        }
    }
}

private struct Exchange: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(V.pattern)
        #expect(a.exchange(V.otherPattern, ordering: order) == V.pattern)
        #expect(a.load() == V.otherPattern)
        #expect(a.exchange(V.otherPattern, ordering: order) == V.otherPattern, "same value")
        #expect(a.exchange(V.max, ordering: order) == V.otherPattern)
        #expect(a.exchange(V.min, ordering: order) == V.max)
        #expect(a.load() == V.min)
    }
}

private struct CompareExchange: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(V.pattern)

        let miss = a.compareExchange(expected: V.otherPattern, desired: 7, ordering: order)
        #expect(miss.exchanged == false)
        #expect(miss.original == V.pattern, "a failed compareExchange reports the value found")
        #expect(a.load() == V.pattern, "a failed compareExchange leaves the value alone")

        let hit = a.compareExchange(expected: V.pattern, desired: V.otherPattern, ordering: order)
        #expect(hit.exchanged == true)
        #expect(hit.original == V.pattern)
        #expect(a.load() == V.otherPattern)

        // Values that differ only in the top bit must not compare equal (no truncation).
        let topBit: V = 1 << (V.bitWidth - 1)
        a.store(0)
        #expect(a.compareExchange(expected: topBit, desired: 5, ordering: order) == (false, 0))
        a.store(topBit)
        #expect(a.compareExchange(expected: 0, desired: 5, ordering: order) == (false, topBit))
        #expect(a.load() == topBit)

        a.store(V.otherPattern)
        #expect(a.compareAndSwap(V.pattern, 1, ordering: order) == false)
        #expect(a.load() == V.otherPattern)
        #expect(a.compareAndSwap(V.otherPattern, 1, ordering: order) == true)
        #expect(a.load() == 1)
    }
}

private struct Arithmetic: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(10)
        #expect(a.add(5, ordering: order) == 15)
        #expect(a.load() == 15)
        #expect(a.subtract(3, ordering: order) == 12)
        #expect(a.load() == 12)
        #expect(a.increment(ordering: order) == 13)
        #expect(a.load() == 13)
        #expect(a.decrement(ordering: order) == 12)
        #expect(a.load() == 12)
        #expect(a.add(0, ordering: order) == 12)
        #expect(a.subtract(0, ordering: order) == 12)

        a.store(V.pattern)
        #expect(a.add(V.otherPattern, ordering: order) == V.pattern &+ V.otherPattern)
        #expect(a.subtract(V.otherPattern, ordering: order) == V.pattern)
        #expect(a.subtract(V.pattern, ordering: order) == 0)
        #expect(a.load() == 0)
    }
}

private struct Bitwise: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        var expected = V.pattern
        let a = AtomicInteger<V>(expected)

        expected |= V.otherPattern
        #expect(a.bitwiseOr(V.otherPattern, ordering: order) == expected)
        #expect(a.load() == expected)

        expected &= ~V.pattern
        #expect(a.bitwiseAnd(~V.pattern, ordering: order) == expected)
        #expect(a.load() == expected)

        expected ^= V.pattern
        #expect(a.bitwiseXor(V.pattern, ordering: order) == expected)
        #expect(a.load() == expected)

        // Identities: or 0, and all-ones, xor 0 change nothing; xor all-ones complements.
        #expect(a.bitwiseOr(0, ordering: order) == expected)
        #expect(a.bitwiseAnd(~V.zero, ordering: order) == expected)
        #expect(a.bitwiseXor(0, ordering: order) == expected)
        #expect(a.bitwiseXor(~V.zero, ordering: order) == ~expected)
        #expect(a.bitwiseAnd(0, ordering: order) == 0)
        #expect(a.bitwiseOr(~V.zero, ordering: order) == ~V.zero)
        #expect(a.load() == ~V.zero)
    }
}

private struct WrapAround: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>(V.max)
        #expect(a.increment(ordering: order) == V.min)
        #expect(a.load() == V.min)
        #expect(a.decrement(ordering: order) == V.max)
        #expect(a.load() == V.max)
        #expect(a.add(1, ordering: order) == V.min)
        #expect(a.subtract(1, ordering: order) == V.max)
        #expect(a.add(V.max, ordering: order) == V.max &+ V.max)
        a.store(V.min)
        #expect(a.subtract(V.max, ordering: order) == V.min &- V.max)
        a.store(0)
        #expect(a.subtract(1, ordering: order) == V.zero &- 1)
        #expect(a.add(V.pattern, ordering: order) == V.pattern &- 1)
    }
}

private struct TestAndSetAndClear: AtomicIntegerCheck {
    let order: MemoryOrder
    func run<V: AtomicIntegerValue>(_: V.Type) {
        let a = AtomicInteger<V>()
        for bit in 0..<V.bitWidth {
            let mask: V = 1 << bit
            a.store(0)
            #expect(a.testAndSet(bit: bit, ordering: order) == false, "bit \(bit) of \(V.self) was clear")
            #expect(a.load() == mask, "bit \(bit) is the mask 1 << \(bit), bit 0 least significant")
            #expect(a.testAndSet(bit: bit, ordering: order) == true, "bit \(bit) was already set")
            #expect(a.load() == mask)
            #expect(a.testAndClear(bit: bit, ordering: order) == true, "bit \(bit) was set")
            #expect(a.load() == 0)
            #expect(a.testAndClear(bit: bit, ordering: order) == false, "bit \(bit) was already clear")
            #expect(a.load() == 0)

            // With every other bit set, only this bit moves.
            a.store(~V.zero)
            #expect(a.testAndClear(bit: bit, ordering: order) == true)
            #expect(a.load() == ~mask)
            #expect(a.testAndSet(bit: bit, ordering: order) == false)
            #expect(a.load() == ~V.zero)
        }
    }
}
