// AtomicBool, single-threaded: init, load, store, exchange (returns the old value) and
// compareExchange (returns (exchanged, original)), with every ordering valid for each.

import Interlock
import Testing

@Suite("AtomicBool: operations and orderings")
struct AtomicBoolTests {
    @Test("init(_:) defaults to false and keeps its argument", arguments: loadOrders)
    func initAndLoad(order: MemoryOrder) {
        #expect(AtomicBool().load(ordering: order) == false)
        #expect(AtomicBool(false).load(ordering: order) == false)
        #expect(AtomicBool(true).load(ordering: order) == true)
    }

    @Test("store is seen by the next load", arguments: storeOrders)
    func store(order: MemoryOrder) {
        let flag = AtomicBool()
        flag.store(true, ordering: order)
        #expect(flag.load() == true)
        flag.store(true, ordering: order)
        #expect(flag.load() == true)
        flag.store(false, ordering: order)
        #expect(flag.load() == false)
    }

    @Test("exchange returns the OLD value", arguments: allOrders)
    func exchange(order: MemoryOrder) {
        let flag = AtomicBool(false)
        #expect(flag.exchange(true, ordering: order) == false)
        #expect(flag.load() == true)
        #expect(flag.exchange(true, ordering: order) == true)
        #expect(flag.exchange(false, ordering: order) == true)
        #expect(flag.load() == false)
        #expect(flag.exchange(false, ordering: order) == false)
    }

    @Test("compareExchange returns (exchanged, original)", arguments: allOrders)
    func compareExchange(order: MemoryOrder) {
        let flag = AtomicBool(false)
        #expect(flag.compareExchange(expected: true, desired: false, ordering: order) == (false, false))
        #expect(flag.load() == false, "a failed compareExchange leaves the value alone")
        #expect(flag.compareExchange(expected: false, desired: true, ordering: order) == (true, false))
        #expect(flag.load() == true)
        #expect(flag.compareExchange(expected: false, desired: false, ordering: order) == (false, true))
        #expect(flag.load() == true)
        #expect(flag.compareExchange(expected: true, desired: true, ordering: order) == (true, true))
        #expect(flag.compareExchange(expected: true, desired: false, ordering: order) == (true, true))
        #expect(flag.load() == false)
    }

    @Test("every ordering parameter defaults to a working call")
    func defaults() {
        let flag = AtomicBool()
        flag.store(true)
        #expect(flag.load())
        #expect(flag.exchange(false) == true)
        #expect(flag.compareExchange(expected: false, desired: true) == (true, false))
        #expect(flag.load())
    }
}
