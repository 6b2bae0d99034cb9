// Lock-order checking keys its graph by address, so a lock that is freed must leave it: a new
// lock at a reused address is a new lock (no false cycle through the old one's edges), and
// creating, nesting and freeing locks for ever keeps the graph's memory bounded. Locks forget
// themselves in their deinit; objects used with `synchronized` are only weakly referenced.

import CInterlock
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: freed locks and reused addresses")
struct LockOrderAddressReuseTests {
    @Test("L -> A, A freed, a new lock A' at A's address: A' -> L is no report, L -> A' then is one")
    func reusedLockAddress() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let outer = namedLock("L")
            // L -> A, then A is freed.
            let reused = _objectAtReusedAddress(make: { Lock() }, use: { holding([.lock(outer), .lock($0)]) })
            reused.name = "A2"
            nestOnNewThread(.lock(reused), .lock(outer))  // A' -> L: A's edge must not count
            writeToStandardError("child: no report through the reused address")
            nestOnNewThread(.lock(outer), .lock(reused))  // L -> A': a real inversion
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: ["Lock \"A2\"", "Lock \"L\"", "closing a cycle of 2 locks"])
        if let text = lockOrderStandardError(result),
            let marker = text.range(of: "child: no report through the reused address")
        {
            #expect(!text[..<marker.lowerBound].contains(lockOrderReportHeader), "stderr:\n\(text)")
        }
    }

    @Test("a lock freed while held (a misuse) leaves the thread's held stack; the next acquisition works")
    func lockFreedWhileHeld() async {
        await #expect(processExitsWith: .success) {
            setLockOrderMode("report")
            let outer = namedLock("L")
            outer.lock()
            do {
                let freed = Lock()
                freed.lock()  // and never unlocked: freed while held
            }
            // Before the fix the freed lock stayed on the stack, and the next acquisition read it
            // as a live object (freed memory).
            if ilk_lockorder_thread_held()!.pointee.count != 1 { exit(7) }
            let next = namedLock("B")
            next.lock()
            next.unlock()
            outer.unlock()
            if ilk_lockorder_thread_held()!.pointee.count != 0 { exit(8) }
        }
    }

    @Test("L -> x for an object x used with synchronized, x freed, x' at its address: x' -> L is no report")
    func reusedSynchronizedAddress() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let outer = namedLock("L")
            let reused = _objectAtReusedAddress(
                make: { LockOrderToken() }, use: { holding([.lock(outer), .synchronized($0)]) })
            nestOnNewThread(.synchronized(reused), .lock(outer))
            writeToStandardError("child: no report through the reused address")
            nestOnNewThread(.lock(outer), .synchronized(reused))
        }
        expectLockOrderOutput(
            result, reports: 1,
            contains: ["synchronized(LockOrderToken at 0x", "Lock \"L\"", "closing a cycle of 2 locks"])
        if let text = lockOrderStandardError(result),
            let marker = text.range(of: "child: no report through the reused address")
        {
            #expect(!text[..<marker.lowerBound].contains(lockOrderReportHeader), "stderr:\n\(text)")
        }
    }

    @Test("10,000 rounds of fresh locks nested in alternating orders: no report, memory bounded")
    func freshLocksInOppositeOrders() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let outer = namedLock("outer")
            @Sendable func round(_ index: Int) {
                let x = LockUse.lock(Lock()), y = LockUse.spinLock(SpinLock())
                let p = LockUse.synchronized(LockOrderToken()), q = LockUse.synchronized(LockOrderToken())
                let rw = LockUse.write(ReadWriteLock())
                if index % 2 == 0 {
                    holding([.lock(outer), x, y, p, q, rw])
                } else {
                    holding([.lock(outer), rw, q, p, y, x])
                }
            }
            onNewThread {
                for index in 0..<1_000 { round(index) }
                let before = residentKiBOrExit()
                for index in 1_000..<11_000 { round(index) }
                let grown = residentKiBOrExit() - before
                writeToStandardError("child: resident memory grew by \(grown) KiB")
                // A graph that kept its nodes, edges and backtraces of freed locks would grow by
                // tens of megabytes.
                if grown > 4096 { exit(3) }
            }
        }
        expectLockOrderOutput(result, reports: 0, contains: ["child: resident memory grew by"])
    }

    @Test("objects used with synchronized under one lock, freed, never at the same address again: memory bounded")
    func deadSynchronizedNodesAreSwept() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let outer = namedLock("outer")
            // Each batch's objects are freed, then their memory is taken by objects kept for
            // good: the next batch lands at new addresses, and the graph's nodes for the freed
            // objects are dead (only weakly referenced) until a sweep removes them.
            @Sendable func batch(_ spacers: inout [LockOrderToken]) {
                do {
                    let objects = (0..<10_000).map { _ in LockOrderToken() }
                    outer.lock()
                    for object in objects { synchronized(object) {} }
                    outer.unlock()
                }
                spacers += (0..<10_000).map { _ in LockOrderToken() }
            }
            onNewThread {
                var spacers: [LockOrderToken] = []
                spacers.reserveCapacity(200_000)
                for _ in 0..<4 { batch(&spacers) }
                let before = residentKiBOrExit()
                for _ in 0..<16 { batch(&spacers) }
                let grown = residentKiBOrExit() - before
                writeToStandardError("child: 16 batches grew resident memory by \(grown) KiB")
                // Kept, their 160,000 nodes, edges and backtraces would take over 50 MiB; the
                // spacers themselves take about 5.
                if grown > 20 * 1024 { exit(3) }
                withExtendedLifetime(spacers) {}
            }
        }
        expectLockOrderOutput(result, reports: 0, contains: ["child: 16 batches grew resident memory by"])
    }
}

/// Makes an object with `make`, runs `use` on it, frees it, then makes objects until one lands
/// at the freed one's address (keeping the others alive meanwhile, so that each is at a new
/// address) and returns it; tries again with a new object when the allocator keeps the address
/// out of reach (as glibc may for the first object of its size a thread allocates). Exits 3
/// when no try finds its address reused.
private func _objectAtReusedAddress<Object: AnyObject>(make: () -> Object, use: (Object) -> Void) -> Object {
    var kept: [Object] = []
    kept.reserveCapacity(100_000)
    for _ in 0..<10 {
        var address: UInt = 0
        do {
            let object = make()
            use(object)
            address = UInt(bitPattern: ObjectIdentifier(object))
        }
        for _ in 0..<10_000 {
            let object = make()
            if UInt(bitPattern: ObjectIdentifier(object)) == address {
                withExtendedLifetime(kept) {}
                return object
            }
            kept.append(object)
        }
    }
    exit(3)
}
#endif
