// What a lock-order report says: the thread that closed the cycle, every lock of the cycle by
// its name (or its type and address), the new edge with a backtrace of where it is being
// taken, and each older edge of the cycle with the thread that first took it and a backtrace.
// The children print markers (addresses, thread ids) that the checks look for in the report.

import CInterlock
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if INTERLOCK_LOCK_ORDER
@Suite("Lock-order checking: the report")
struct LockOrderReportTests {
    @Test("a 2-lock cycle: the threads, the locks by name or type and address, each edge with a backtrace")
    func twoLockReport() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let a = namedLock("A"), spin = SpinLock()
            writeToStandardError("marker a=\(lockOrderHex(a))")
            writeToStandardError("marker spin=\(lockOrderHex(spin))")
            let first = LockGuarded<UInt32>(0), second = LockGuarded<UInt32>(0)
            onNewThread {
                first.value = ilk_current_thread_id()
                holding([.lock(a), .spinLock(spin)])
            }
            onNewThread {
                second.value = ilk_current_thread_id()
                holding([.spinLock(spin), .lock(a)])
            }
            writeToStandardError("marker first=\(first.value)")
            writeToStandardError("marker second=\(second.value)")
        }
        expectLockOrderOutput(result, reports: 1)
        guard let text = lockOrderStandardError(result), let a = childMarker("marker a=", in: text),
            let spin = childMarker("marker spin=", in: text), let first = childMarker("marker first=", in: text),
            let second = childMarker("marker second=", in: text)
        else {
            Issue.record("the child's markers are missing; stderr:\n\(lockOrderStandardError(result) ?? "")")
            return
        }
        let lockA = "Lock \"A\" (\(a))", spinLock = "SpinLock at \(spin)"
        let expectedLines = [
            "Interlock lock-order violation (INTERLOCK_LOCK_ORDER=report): thread \(second) locks \(lockA) "
                + "while holding \(spinLock), closing a cycle of 2 locks (a potential deadlock):",
            "  \(spinLock) -> \(lockA)   here",
            "  \(lockA) -> \(spinLock)   first seen on thread \(first):",
        ]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for expected in expectedLines {
            #expect(lines.contains(expected), "no line \"\(expected)\" in stderr:\n\(text)")
        }
        // The new edge's backtrace follows its line, and the older edge's follows its own.
        for heading in expectedLines.dropFirst() {
            #expect(_framesFollow(heading, in: lines) > 0, "no backtrace under \"\(heading)\"; stderr:\n\(text)")
        }
    }

    @Test("a 3-lock cycle: every older edge has its line, thread and backtrace")
    func threeLockReport() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setLockOrderMode("report")
            let recursive = RecursiveLock()
            recursive.name = "R"
            closeCycle([.lock(namedLock("A")), .recursiveLock(recursive), .synchronized(LockOrderToken())])
        }
        expectLockOrderOutput(result, reports: 1, contains: ["closing a cycle of 3 locks"])
        guard let text = lockOrderStandardError(result) else { return }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let sightings = lines.filter { $0.contains("first seen on thread") }
        #expect(sightings.count == 2, "stderr:\n\(text)")
        for line in sightings {
            #expect(_framesFollow(line, in: lines) > 0, "no backtrace under \"\(line)\"; stderr:\n\(text)")
        }
        // Each of the three locks appears on the edge lines, by name or by type and address.
        let edges = lines.filter { $0.hasPrefix("  ") && $0.contains(" -> ") }.joined(separator: "\n")
        for fragment in ["Lock \"A\"", "RecursiveLock \"R\"", "synchronized(LockOrderToken at 0x"] {
            #expect(occurrences(of: fragment, in: edges) == 2, "\(fragment) on two edge lines; stderr:\n\(text)")
        }
    }
}

/// How many backtrace frame lines (indented six spaces, with a return address) follow the
/// line `heading` in `lines`.
private func _framesFollow(_ heading: String, in lines: [String]) -> Int {
    guard let index = lines.firstIndex(of: heading) else { return 0 }
    return lines[(index + 1)...].prefix { $0.hasPrefix("      ") && $0.contains("[0x") }.count
}
#endif
