// Tests of AsyncLazy: one computation for 1,000 concurrent tasks, all of which get the same
// instance; a thrown error reaches every waiter of its computation and is not cached (the next
// read computes again); a cancelled waiter is resumed at once with CancellationError while the
// computation and the other waiters go on; cancelling the reader that started the computation
// does not cancel it; a task cancelled before it reads starts nothing; the value's contents are
// visible to a reader on the inline path; cancellations racing the computation's end resume every
// waiter exactly once.
//
// The computation is held at a gate that the test opens (no sleeps): the tests wait until the
// waiters they started are registered (`_waiterCount`, by yielding) before they open it, so every
// read under test overlaps the computation. A waiter that is never resumed hangs its test until
// the time limit, which fails it.

import Testing

@testable import Interlock

@Suite("AsyncLazy", .timeLimit(.minutes(2)))
struct AsyncLazyTests {
    @Test("1,000 concurrent tasks: make runs once and every task gets the same instance")
    func oneComputationForManyTasks() async throws {
        let tasks = 1_000
        let makeCalls = AtomicInt(0)
        let gate = Gate()
        let lazy = AsyncLazy<Payload> {
            makeCalls.increment()
            await gate.wait()
            return Payload(tag: 7)
        }
        let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<tasks {
                group.addTask { ObjectIdentifier(try await lazy.value) }
            }
            // Every task awaits the one computation, held at the gate until all have registered.
            #expect(await eventually { lazy._waiterCount == tasks }, "waiting: \(lazy._waiterCount) of \(tasks)")
            await gate.open()
            var identities: Set<ObjectIdentifier> = []
            for try await identity in group { identities.insert(identity) }
            return identities
        }
        #expect(makeCalls.load() == 1)
        #expect(identities.count == 1, "tasks got \(identities.count) different instances")
        // Later reads (the inline path) return the same instance and compute nothing.
        let later = try await lazy.value
        #expect(identities == [ObjectIdentifier(later)])
        #expect(later.isComplete(tag: 7))
        #expect(makeCalls.load() == 1)
        #expect(lazy._waiterCount == 0)
    }

    @Test("a thrown error reaches every waiter of its computation; the next read computes again")
    func errorGoesToEveryWaiterAndIsNotCached() async throws {
        let waiters = 100
        let makeCalls = AtomicInt(0)
        let gate = Gate()
        let lazy = AsyncLazy<Payload> {
            let call = makeCalls.increment()
            if call == 1 {
                await gate.wait()
                throw AttemptFailed(call: call)
            }
            return Payload(tag: call)
        }
        let results = await withTaskGroup(of: Result<Payload, any Error>.self) { group in
            for _ in 0..<waiters {
                group.addTask {
                    do { return .success(try await lazy.value) } catch { return .failure(error) }
                }
            }
            #expect(await eventually { lazy._waiterCount == waiters }, "waiting: \(lazy._waiterCount) of \(waiters)")
            await gate.open()
            var results: [Result<Payload, any Error>] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(makeCalls.load() == 1)
        // Every waiter of the failed computation got its error, the same one.
        let errors = results.compactMap { result -> AttemptFailed? in
            if case .failure(let error) = result { return error as? AttemptFailed }
            return nil
        }
        #expect(errors.count == waiters, "\(errors.count) of \(waiters) waiters got the error")
        #expect(errors.allSatisfy { $0 == AttemptFailed(call: 1) })
        #expect(lazy._waiterCount == 0)

        // Not cached: the next read runs make again, which succeeds, and that value stays.
        let value = try await lazy.value
        #expect(makeCalls.load() == 2)
        #expect(value.isComplete(tag: 2))
        #expect(try await lazy.value === value)
        #expect(makeCalls.load() == 2)
    }

    @Test("a cancelled waiter gets CancellationError at once; the others get the value; make ran once")
    func cancellingOneWaiter() async throws {
        let makeCalls = AtomicInt(0)
        let started = Gate()
        let gate = Gate()
        let lazy = AsyncLazy<Payload> {
            makeCalls.increment()
            await started.open()
            await gate.wait()
            return Payload(tag: 1)
        }
        let first = Task { try await lazy.value }
        await started.wait()
        let victim = Task { try await lazy.value }
        let other = Task { try await lazy.value }
        #expect(await eventually { lazy._waiterCount == 3 }, "waiting: \(lazy._waiterCount) of 3")

        victim.cancel()
        // The gate is still closed: only the cancellation can resume the victim.
        let victimResult = await victim.result
        #expect(throws: CancellationError.self) { try victimResult.get() }
        #expect(lazy._waiterCount == 2, "the cancelled waiter's entry must be gone")

        await gate.open()
        let firstValue = try await first.value
        let otherValue = try await other.value
        #expect(firstValue === otherValue)
        #expect(firstValue.isComplete(tag: 1))
        #expect(makeCalls.load() == 1)
        #expect(try await lazy.value === firstValue)
        #expect(makeCalls.load() == 1)
    }

    @Test("cancelling the reader that started the computation does not cancel it")
    func cancellingTheFirstReader() async throws {
        let makeCalls = AtomicInt(0)
        let makeSawCancellation = AtomicBool(false)
        let started = Gate()
        let gate = Gate()
        let lazy = AsyncLazy<Payload> {
            makeCalls.increment()
            await started.open()
            await gate.wait()
            if Task.isCancelled { makeSawCancellation.store(true) }
            return Payload(tag: 3)
        }
        let first = Task { try await lazy.value }
        await started.wait()
        first.cancel()
        let firstResult = await first.result
        #expect(throws: CancellationError.self) { try firstResult.get() }
        #expect(lazy._waiterCount == 0)

        // The computation still runs: a new reader joins it instead of starting another.
        let joiner = Task { try await lazy.value }
        #expect(await eventually { lazy._waiterCount == 1 })
        await gate.open()
        let value = try await joiner.value
        #expect(value.isComplete(tag: 3))
        #expect(makeCalls.load() == 1)
        #expect(!makeSawCancellation.load(), "the computation ran in a cancelled task")
    }

    @Test("a computation whose only reader was cancelled completes, and its value is kept")
    func computationOutlivesItsCancelledReaders() async throws {
        let makeCalls = AtomicInt(0)
        let started = Gate()
        let gate = Gate()
        let finished = Gate()
        let lazy = AsyncLazy<Payload> {
            makeCalls.increment()
            await started.open()
            await gate.wait()
            await finished.open()
            return Payload(tag: 4)
        }
        let first = Task { try await lazy.value }
        await started.wait()
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        await gate.open()
        await finished.wait()
        // make has returned (the value is stored now, or a read joins the ending computation).
        let value = try await lazy.value
        #expect(value.isComplete(tag: 4))
        #expect(makeCalls.load() == 1)
    }

    @Test("a task cancelled before it reads: CancellationError and no computation; the value once it exists")
    func cancelledBeforeReading() async throws {
        let makeCalls = AtomicInt(0)
        let lazy = AsyncLazy<Payload> {
            makeCalls.increment()
            return Payload(tag: 5)
        }
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await lazy.value
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(makeCalls.load() == 0, "a cancelled reader started a computation")
        #expect(lazy._waiterCount == 0)

        let value = try await lazy.value
        #expect(makeCalls.load() == 1)
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await lazy.value
        }
        #expect(try await late.value === value, "the value exists: a cancelled reader gets it")
        #expect(makeCalls.load() == 1)
    }

    @Test("a reader on the inline path sees what make wrote without other synchronization")
    func inlinePathReaderSeesTheContents() async throws {
        // As LazyTests.fastPathReadersSeeValue: a plain thread, started before the computation,
        // spins on the inline path's check (`_isDone`, which `value` inlines) until it reads
        // DONE, then reads the plain fields make wrote into a payload the thread has held
        // since before the computation. That acquire is the thread's only happens-before edge
        // from make, so under ThreadSanitizer a weaker load there is reported as a race on the
        // fields. The thread touches nothing else of the AsyncLazy: at -Onone a copy of `_value`
        // (an Optional of a generic type) goes through the runtime's metadata cache, whose
        // locks ThreadSanitizer would take for the missing edge; and the reader is not a task,
        // because between tasks it sees the concurrency runtime's own edges.
        for round in 0..<TestScale.count(50, small: 10) {
            let payload = Payload(tag: -1)
            let lazy = AsyncLazy<Payload> { payload.fill(tag: round) }
            let spinning = AtomicBool(false)
            let sawComplete = AtomicBool(false)
            let reader = TestThread {
                spinning.store(true)
                let limit = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < limit {
                    guard lazy._isDone else { continue }
                    sawComplete.store(payload.isComplete(tag: round))
                    return
                }
            }
            #expect(await eventually { spinning.load() })
            let value = try await lazy.value
            reader.join()
            #expect(value === payload)
            #expect(sawComplete.load(), "round \(round): the reader saw a partly built payload, or none in a minute")
        }
    }

    @Test("cancellations racing the computation's end: every waiter is resumed exactly once")
    func cancellationsRaceTheEnd() async throws {
        for round in 0..<TestScale.count(200, small: 20) {
            let makeCalls = AtomicInt(0)
            let gate = Gate()
            let lazy = AsyncLazy<Payload> {
                makeCalls.increment()
                await gate.wait()
                return Payload(tag: round)
            }
            let waiters = (0..<8).map { _ in Task { try await lazy.value } }
            #expect(await eventually { lazy._waiterCount == waiters.count })
            // Cancel half the waiters while the computation ends.
            let canceller = Task { for waiter in waiters[..<4] { waiter.cancel() } }
            await gate.open()
            await canceller.value
            for (index, waiter) in waiters.enumerated() {
                switch await waiter.result {
                case .success(let value):
                    #expect(value.isComplete(tag: round))
                case .failure(let error):
                    #expect(index < 4, "round \(round): waiter \(index) was not cancelled but got \(error)")
                    #expect(error is CancellationError, "round \(round): \(error)")
                }
            }
            #expect(makeCalls.load() == 1, "round \(round)")
            #expect(lazy._waiterCount == 0, "round \(round)")
        }
    }
}

/// A value with plain (non-atomic) stored fields, written by make as it builds the value (or
/// fills one in), so that a reader who sees them complete saw make's writes.
private final class Payload: @unchecked Sendable {
    var tag: Int
    var numbers: [Int] = []
    var text = ""

    init(tag: Int) {
        self.tag = tag
        numbers = (0..<64).map { $0 &* tag }
        text = "payload \(tag)"
    }

    /// Rewrites every field for `tag`, and returns self.
    func fill(tag: Int) -> Payload {
        self.tag = tag
        numbers = (0..<64).map { $0 &* tag }
        text = "payload \(tag)"
        return self
    }

    func isComplete(tag expected: Int) -> Bool {
        tag == expected && numbers.count == 64 && numbers[63] == 63 &* expected && text == "payload \(expected)"
    }
}

/// The error of a make that throws on its `call`-th run.
private struct AttemptFailed: Error, Equatable {
    let call: Int
}

/// A gate tasks wait at until it is opened; opening is final.
private actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

/// Yields until `condition` holds (true), or a minute passes (false). Waits for something the
/// test can observe, not for time to pass.
private func eventually(_ condition: () -> Bool) async -> Bool {
    let limit = ContinuousClock.now + .seconds(60)
    while !condition() {
        if ContinuousClock.now >= limit { return false }
        await Task.yield()
    }
    return true
}
