// The trait `.blocking`: a synchronous test runs on a thread of its own, not on the cooperative
// pool.
//
// Why. Swift Testing calls a synchronous test function on a thread of Swift concurrency's
// cooperative pool, which has one thread per core: two here. Every synchronous test of this
// target blocks its thread for seconds (initdb and pg_ctl, child processes awaited, a
// lock(before:) waiting in the server; the crash and partition tests for two minutes), and one
// test process runs every test target of the package. So two such tests at once stopped every
// async test of the package: a CI run measured a 0.9 s PostgresSemaphore test at 168 s, with
// acquisitions waiting over 60 s for a thread.
//
// How. The trait runs each test case under `withTaskExecutorPreference` of a
// `DedicatedThreadExecutor`: the test's body, synchronous, runs on that thread, and its
// issues are still attributed to it (the same task, with its task-local test context). At most
// `blockingTestGate`'s count of such tests run at once, about as many as the pool ran before,
// so moving them off the pool does not start 40 PostgreSQL servers together; waiting for the
// gate suspends, it does not block.
//
// Only for synchronous tests: an async test under the trait would run every child task on one
// thread, and a task that blocked it would stop the others. So a suite of synchronous tests
// takes the trait as a suite trait (it applies to each test), and a suite that mixes both puts it
// on its synchronous tests.

import Interlock
import Testing

/// A test trait that runs each case of a synchronous test on a thread of its own (see the file
/// comment).
struct BlockingTestTrait: TestTrait, SuiteTrait, TestScoping {
    /// As a suite trait, applies to every test of the suite.
    var isRecursive: Bool { true }

    /// A scope for each test case; none for the suite itself.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    /// Runs `function` (the test case's body) on a dedicated thread, once the gate admits it.
    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await blockingTestGate.wait()
        defer { blockingTestGate.signal() }
        try await onDedicatedThread { try await function() }
    }
}

extension Trait where Self == BlockingTestTrait {
    /// Runs a synchronous test's cases on threads of their own, off the cooperative pool.
    static var blocking: Self { BlockingTestTrait() }
}

/// How many `.blocking` tests run at once: two, as many as the cooperative pool of this 2-core
/// machine used to run.
let blockingTestGate = Semaphore(value: 2)
