// The porting guide's guarded example ("Porting from Darwin", README): code that keeps its
// Darwin calls behind `#if canImport(Darwin)` builds its Darwin branch on Linux once each guard
// also accepts InterlockCompat. This file is that code, compiled and run here.

import Testing

#if canImport(Darwin)
import os
#elseif canImport(InterlockCompat)
import InterlockCompat
#endif

private final class Hits: Sendable {
    #if canImport(Darwin) || canImport(InterlockCompat)
    private let count = OSAllocatedUnfairLock(initialState: 0)
    func record() { count.withLock { $0 += 1 } }
    var total: Int { count.withLock { $0 } }
    static let branch = "Darwin's"
    #else
    func record() {}
    var total: Int { 0 }
    static let branch = "the fallback"
    #endif
}

@Suite("Porting guide: guarded Darwin code")
struct GuardedPortTests {
    @Test("a guard that also accepts InterlockCompat takes the Darwin branch on Linux")
    func guardTakesTheDarwinBranch() {
        #expect(Hits.branch == "Darwin's")
        let hits = Hits()
        compatRunThreads(4) { _ in for _ in 0..<1_000 { hits.record() } }
        #expect(hits.total == 4_000)
    }
}
