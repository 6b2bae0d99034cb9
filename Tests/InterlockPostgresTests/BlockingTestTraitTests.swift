// The trait `.blocking` (Support/BlockingTestTrait.swift): a synchronous test under it runs on
// a dedicated thread, off the cooperative pool; one without it runs on the pool.

import Testing

@Suite("The test trait .blocking", .blocking)
struct BlockingTestTraitTests {
    @Test("a synchronous test of a .blocking suite runs on a dedicated thread")
    func suiteTestRunsOnItsOwnThread() {
        #expect(DedicatedThreadExecutor.currentThreadIsDedicated)
    }

    @Test("each case of a parameterized test does too", arguments: [1, 2, 3])
    func everyCaseRunsOnItsOwnThread(_ index: Int) {
        #expect(DedicatedThreadExecutor.currentThreadIsDedicated, "case \(index)")
    }
}

@Suite("The test trait .blocking, absent")
struct WithoutBlockingTestTraitTests {
    @Test("a synchronous test without it runs on the cooperative pool")
    func runsOnThePool() {
        #expect(!DedicatedThreadExecutor.currentThreadIsDedicated)
    }

    @Test("as a test trait it applies to that test", .blocking)
    func testTraitApplies() {
        #expect(DedicatedThreadExecutor.currentThreadIsDedicated)
    }
}
