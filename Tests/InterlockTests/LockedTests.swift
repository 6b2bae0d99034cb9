// Tests of Locked<Value>: the value reached only under the lock, exclusion under contention,
// typed errors with the lock released, the try and timed forms, noncopyable values and
// results, `sending` across the lock, the name, and the relock trap.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The error of the typed-throws tests.
private enum LedgerError: Error, Equatable {
    case overdrawn(by: Int)
}

/// A value that cannot be copied: a unique token.
private struct Token: ~Copyable {
    var serial: Int
}

/// A mutable class that is not `Sendable`, to move across the lock with `sending`.
private final class Scratch {
    var entries: [Int] = []
}

/// Compile-time check: a type that keeps its state in a `Locked` is `Sendable` without
/// `@unchecked`, even when the state itself is not `Sendable`.
private final class Ledger: Sendable {
    let balance = Locked(0)
    let scratch = Locked(Scratch())

    func withdraw(_ amount: Int) throws(LedgerError) -> Int {
        try balance.withLock { (balance: inout Int) throws(LedgerError) -> Int in
            if amount > balance { throw .overdrawn(by: amount - balance) }
            balance -= amount
            return balance
        }
    }
}

@Suite("Locked")
struct LockedTests {
    @Test("a counter and a two-field invariant updated under the lock by several threads stay exact")
    func exclusion() {
        struct Pair { var a = 0, b = 0 }
        let locked = Locked(Pair())
        let rounds = TestScale.count(20_000, small: 500)
        let torn = AtomicInt(0)
        runConcurrently(threadCount: 4) { _ in
            for _ in 0..<rounds {
                locked.withLock { pair in
                    if pair.a != pair.b { _ = torn.add(1) }
                    pair.a += 1
                    pair.b += 1
                }
            }
        }
        #expect(torn.load() == 0, "a body saw another body's half-done update")
        #expect(locked.withLock { $0.a } == 4 * rounds)
    }

    @Test("threads that sleep in the kernel are all woken: none is lost")
    func sleepersAreWoken() {
        let locked = Locked(0)
        let rounds = TestScale.count(300, small: 30)
        runConcurrently(threadCount: 6) { _ in
            for _ in 0..<rounds {
                locked.withLock { value in
                    value += 1
                    sched_yield()  // hold across a yield, so the others spin out and park
                }
            }
        }
        #expect(locked.withLock { $0 } == 6 * rounds)
    }

    @Test("withLock returns the body's result and leaves the change in the value")
    func withLockReturns() {
        let locked = Locked([1, 2])
        let count = locked.withLock { array in
            array.append(3)
            return array.count
        }
        #expect(count == 3)
        #expect(locked.withLock { $0 } == [1, 2, 3])
    }

    @Test("a typed error propagates with its type, and the lock is released")
    func typedErrorReleasesTheLock() {
        let ledger = Ledger()
        ledger.balance.withLock { $0 = 10 }
        #expect((try? ledger.withdraw(4)) == 6)
        do {
            _ = try ledger.withdraw(9)
            Issue.record("the withdrawal should have thrown")
        } catch {
            // `error` is a LedgerError here, not `any Error`: typed throws end to end.
            #expect(error == .overdrawn(by: 3))
        }
        #expect(ledger.balance.withLockIfAvailable { $0 } == 6, "the lock stayed held after the throw")
    }

    @Test("an untyped throwing body makes withLock throw any Error; a non-throwing one needs no try")
    func untypedAndNonThrowingBodies() {
        let locked = Locked(0)
        #expect(throws: LockTestError.self) {
            try locked.withLock { (_: inout Int) throws in throw LockTestError() }
        }
        let value: Int = locked.withLock { $0 }  // E == Never: no `try`
        #expect(value == 0)
    }

    @Test("withLockIfAvailable runs the body on a free lock and returns nil at once on a held one")
    func ifAvailable() {
        let locked = Locked(5)
        #expect(locked.withLockIfAvailable { $0 + 1 } == 6)
        let holding = AtomicBool(false)
        let release = AtomicBool(false)
        let holder = TestThread {
            locked.withLock { _ in
                holding.store(true)
                spinUntil { release.load() }
            }
        }
        spinUntil { holding.load() }
        let start = ContinuousClock.now
        let ran = AtomicBool(false)
        let result: Int? = locked.withLockIfAvailable { value in
            ran.store(true)
            return value
        }
        #expect(result == nil)
        #expect(!ran.load(), "the body ran while another thread held the lock")
        #expect(ContinuousClock.now - start < lockLatenessLimit, "withLockIfAvailable waited")
        release.store(true)
        holder.join()
        #expect(locked.withLockIfAvailable { $0 } == 5)
    }

    @Test("withLock(before:) on a held lock returns nil no earlier than its deadline")
    func timedFormTimesOut() {
        let locked = Locked(0)
        let holding = AtomicBool(false)
        let release = AtomicBool(false)
        let holder = TestThread {
            locked.withLock { _ in
                holding.store(true)
                spinUntil { release.load() }
            }
        }
        spinUntil { holding.load() }
        for timeout in [Duration.milliseconds(1), .milliseconds(20), .milliseconds(100)] {
            expectTimedOut(
                timedAttempt(after: timeout) { deadline in locked.withLock(before: deadline) { _ in true } != nil })
        }
        // A deadline already passed is a try.
        #expect(locked.withLock(before: .now - .seconds(1)) { _ in 1 } == nil)
        release.store(true)
        holder.join()
        #expect(locked.withLock(before: .now - .seconds(1)) { $0 + 7 } == 7)
    }

    @Test("withLock(before:) succeeds when the holder releases before the deadline")
    func timedFormSucceeds() {
        let locked = Locked(0)
        let holding = AtomicBool(false)
        let release = AtomicBool(false)
        let holder = TestThread {
            locked.withLock { value in
                holding.store(true)
                spinUntil { release.load() }
                value = 41
            }
        }
        spinUntil { holding.load() }
        let waiterStarted = AtomicBool(false)
        let result = LockGuarded<Int?>(nil)
        let waiter = TestThread {
            waiterStarted.store(true)
            result.value = locked.withLock(before: .now + lockStallLimit) { value in
                value += 1
                return value
            }
        }
        spinUntil { waiterStarted.load() }
        release.store(true)
        holder.join()
        waiter.join()
        #expect(result.value == 42)
    }

    @Test("a noncopyable value is mutated in place, and a noncopyable result moves out")
    func noncopyableValueAndResult() {
        let locked = Locked(Token(serial: 1))
        locked.withLock { $0.serial += 1 }
        let issued: Token = locked.withLock { token in
            token.serial += 1
            return Token(serial: token.serial * 100)
        }
        #expect(issued.serial == 300)
        #expect(locked.withLock { $0.serial } == 3)
        let maybe: Token? = locked.withLockIfAvailable { Token(serial: $0.serial) }
        if let token = maybe {
            #expect(token.serial == 3)
        } else {
            Issue.record("withLockIfAvailable on a free lock returned nil")
        }
    }

    @Test("a value that is not Sendable moves in, is changed under the lock, and a fresh one moves out")
    func sendingValues() {
        let ledger = Ledger()
        runConcurrently(threadCount: 3) { index in
            for i in 0..<100 { ledger.scratch.withLock { $0.entries.append(index * 1000 + i) } }
        }
        // A new object built in the body is in a region of its own: it may leave as `sending`.
        let copy: Scratch = ledger.scratch.withLock { scratch in
            let fresh = Scratch()
            fresh.entries = scratch.entries.sorted()
            return fresh
        }
        #expect(copy.entries.count == 300)
        #expect(copy.entries == (0..<3).flatMap { t in (0..<100).map { t * 1000 + $0 } })
        // A value the caller still refers to cannot be stored into the lock: capturing a
        // non-Sendable local in the body is refused at compile time ("'inout sending'
        // parameter '$0' cannot be task-isolated at end of function").
    }

    @Test("the value and the lock words share one allocation, the value after the words")
    func oneAllocation() {
        let locked = Locked(UInt64(0xfeed))
        let object = UnsafeMutableRawPointer(Unmanaged.passUnretained(locked).toOpaque())
        let state = UnsafeMutableRawPointer(locked._statePointer)
        #expect(state == object + 16, "the state is the object's first stored property")
        #expect(state.load(fromByteOffset: 16, as: UInt64.self) == 0xfeed)
        // An over-aligned value is placed at its alignment.
        let wide = Locked(SIMD16<Float>(repeating: 2))
        #expect(
            Int(bitPattern: UnsafeMutableRawPointer(wide._statePointer)) % MemoryLayout<SIMD16<Float>>.alignment == 0)
        #expect(wide.withLock { $0[15] } == 2)
    }

    @Test("name is nil until set, and can be set and read from any thread")
    func name() {
        let locked = Locked(0)
        #expect(locked.name == nil)
        locked.name = "sessions"
        #expect(locked.name == "sessions")
        runConcurrently(threadCount: 2) { index in
            for i in 0..<TestScale.count(1_000, small: 100) {
                if index == 0 { locked.name = "name \(i)" } else { _ = locked.name }
            }
        }
        #expect(locked.name?.hasPrefix("name ") == true)
    }

    @Test("withLock from inside its own body traps, naming the Locked")
    func relockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let locked = Locked(0)
            locked.name = "sessions"
            locked.withLock { _ in locked.withLock { $0 += 1 } }
        }
        expectTrapMessage(result, contains: "Locked \"sessions\"", "locked again from inside its own withLock body")
    }

    @Test("withLockIfAvailable and withLock(before:) from inside the body trap too, not return nil")
    func relockTrapsInTryAndTimedForms() async {
        let tried = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let locked = Locked(0)
            locked.withLock { _ in _ = locked.withLockIfAvailable { $0 } }
        }
        expectTrapMessage(tried, contains: "Locked (unnamed)", "a relock")
        let timed = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let locked = Locked(0)
            locked.withLock { _ in _ = locked.withLock(before: .now + .seconds(60)) { $0 } }
        }
        expectTrapMessage(timed, contains: "Locked (unnamed)", "a relock")
    }

    @Test("another Locked taken inside the body is no relock")
    func nestedDistinctLocks() {
        let outer = Locked(1)
        let inner = Locked(2)
        #expect(outer.withLock { a in inner.withLock { b in a + b } } == 3)
    }
}

/// Source compatibility of the typed-throws `withLock`: code written for the `rethrows` forms
/// (a wrapper that rethrows, a body that throws untyped, a body that cannot throw) compiles
/// unchanged and behaves as before.
@Suite("withLock: typed throws, callers of the rethrows form unchanged")
struct TypedThrowsCompatibilityTests {
    private func guarded<T>(_ lock: some Locking, _ body: () throws -> T) rethrows -> T {
        try lock.withLock(body)
    }

    private func readGuarded<T>(_ lock: ReadWriteLock, _ body: () throws -> T) rethrows -> T {
        try lock.withReadLock(body)
    }

    @Test("a rethrowing wrapper, untyped and non-throwing bodies, and a typed error through each lock type")
    func callers() {
        let locks: [any Locking] = [Lock(), SpinLock(), RecursiveLock(), Condition(), ConditionLock()]
        for lock in locks {
            #expect(guarded(lock) { 1 } == 1)
            #expect(throws: LockTestError.self) { try guarded(lock) { throw LockTestError() } }
            do throws(LedgerError) {
                try lock.withLock { () throws(LedgerError) in throw .overdrawn(by: 1) }
            } catch {
                #expect(error == .overdrawn(by: 1))
            }
            #expect(lock.tryLock(), "\(type(of: lock)) stayed locked after a throw")
            lock.unlock()
        }
        let rw = ReadWriteLock()
        #expect(readGuarded(rw) { 2 } == 2)
        #expect(throws: LockTestError.self) { try rw.withWriteLock { throw LockTestError() } }
        let token: Token = rw.withWriteLock { Token(serial: 9) }  // a noncopyable result
        #expect(token.serial == 9)
        #expect(rw.tryLockWrite())
        rw.unlockWrite()
    }
}
