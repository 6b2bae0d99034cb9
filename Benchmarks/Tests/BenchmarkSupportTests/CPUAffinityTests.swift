// CPUAffinity: the probe's pinning reads, sets and restores the calling thread's CPU mask.

@testable import BenchmarkSupport
import Testing

@Suite("CPUAffinity")
struct CPUAffinityTests {
    @Test("pinning to one allowed CPU takes effect, and restoring the saved mask undoes it")
    func pinAndRestore() throws {
        let saved = try #require(CPUAffinity.current())
        let allowed = saved.cpus
        #expect(!allowed.isEmpty)
        let target = try #require(allowed.last)
        #expect(CPUAffinity.only(target).apply())
        #expect(CPUAffinity.current()?.cpus == [target])
        #expect(saved.apply())
        #expect(CPUAffinity.current()?.cpus == allowed)
    }

    @Test("a one-CPU mask lists exactly that CPU")
    func onlyMask() {
        #expect(CPUAffinity.only(0).cpus == [0])
        #expect(CPUAffinity.only(9).cpus == [9])
        #expect(CPUAffinity.only(130).cpus == [130])
    }
}
