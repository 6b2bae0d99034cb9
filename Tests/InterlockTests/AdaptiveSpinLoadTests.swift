// Tests of the load detection behind the adaptive spin (Sources/Interlock/Locks/AdaptiveSpin.swift,
// "Under load"): the run-delay reading, the process-wide record of a load and its expiry, and
// what a recorded load changes (no condition spin).
//
// The record is process-wide and other suites' sleepers may write it at any moment (a loaded
// test machine is exactly what it detects), so these tests assert only what such writes cannot
// undo: a record they make themselves, and expiry read at a time far past any other record.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a test thread measured, read after it has been joined.
private final class Readings: @unchecked Sendable {
    var values: [Int32] = []
}

/// glibc's affinity calls are GNU extensions, which Swift's Glibc module does not declare (no
/// _GNU_SOURCE): looked up by name in the C library (as Benchmarks/Sources/BenchmarkSupport does).
private typealias AffinityCall = @convention(c) (pid_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32

private func affinityCall(_ name: String) -> AffinityCall {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
        preconditionFailure("the C library has no \(name)")
    }
    return unsafeBitCast(symbol, to: AffinityCall.self)
}

/// Confines the calling thread to `cpu`. Traps when the system refuses (an environmental
/// failure the test cannot work around).
private func pinCallingThread(to cpu: Int) {
    var set = cpu_set_t()
    withUnsafeMutableBytes(of: &set) { bytes in
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        bytes[cpu / 8] |= UInt8(1 << (cpu % 8))
    }
    let rc = affinityCall("sched_setaffinity")(0, MemoryLayout<cpu_set_t>.size, &set)
    precondition(rc == 0, "sched_setaffinity(cpu \(cpu)) failed: errno \(errno)")
}

/// A CPU the calling process may run on.
private func someAllowedCPU() -> Int {
    var set = cpu_set_t()
    let rc = affinityCall("sched_getaffinity")(0, MemoryLayout<cpu_set_t>.size, &set)
    precondition(rc == 0, "sched_getaffinity failed: errno \(errno)")
    return withUnsafeBytes(of: &set) { bytes in
        for index in 0..<(bytes.count * 8) where bytes[index / 8] & UInt8(1 << (index % 8)) != 0 {
            return index
        }
        preconditionFailure("sched_getaffinity returned no CPU")
    }
}

/// Spins for `nanoseconds` of wall time.
private func busy(for nanoseconds: Int64) {
    let start = ilk_clock_monotonic_ns()
    while ilk_clock_monotonic_ns() - start < nanoseconds { ilk_spin_pause() }
}

/// Runs `body` on a new thread confined to one CPU beside a busy thread confined to the same
/// CPU (each then waits for the CPU about half the time), and returns once both have ended.
private func besideBusyThreadOnOneCPU(_ body: @escaping @Sendable () -> Void) {
    let cpu = someAllowedCPU()
    let stop = AtomicBool(false)
    let started = AtomicBool(false)
    let hog = TestThread {
        pinCallingThread(to: cpu)
        started.store(true)
        while !stop.load(ordering: .relaxed) { ilk_spin_pause() }  // Relaxed: a flag polled.
    }
    onNewThread {
        pinCallingThread(to: cpu)
        while !started.load() { sched_yield() }
        body()
    }
    stop.store(true)
    hog.join()
}

@Suite("Adaptive spin under load", .serialized)
struct AdaptiveSpinLoadTests {
    @Test("a thread's first run-delay check only records, and a check within the interval reads nothing")
    func firstCheckRecords() {
        let readings = Readings()
        onNewThread {
            let now = ilk_clock_monotonic_ns()
            readings.values.append(ilk_spin_run_delay_permille(now, 10_000_000))
            readings.values.append(ilk_spin_run_delay_permille(now + 1_000, 10_000_000))
            // Past the interval: a reading, in 0...1000.
            readings.values.append(ilk_spin_run_delay_permille(now + 20_000_000, 10_000_000))
        }
        #expect(readings.values.count == 3)
        #expect(readings.values[0] == -1, "a first check must only record")
        #expect(readings.values[1] == -1, "a check within the interval must read nothing")
        #expect((0...1000).contains(readings.values[2]), "a check past the interval read \(readings.values[2])")
    }

    @Test("a thread that shares its CPU with a busy thread reads a run delay above the threshold")
    func sharedCPUIsLoaded() {
        let readings = Readings()
        besideBusyThreadOnOneCPU {
            _ = ilk_spin_run_delay_permille(ilk_clock_monotonic_ns(), 0)  // records
            busy(for: 100_000_000)
            readings.values.append(ilk_spin_run_delay_permille(ilk_clock_monotonic_ns(), 0))
        }
        #expect(readings.values.count == 1)
        #expect(
            readings.values.first ?? -1 > _AdaptiveSpin.loadedRunDelay,
            "run delay \(readings.values.first ?? -1)‰ beside a busy thread on the same CPU")
    }

    @Test("a recorded load cuts the spin window to none, and ends after loadMemory")
    func recordedLoadExpires() {
        let now = ilk_clock_monotonic_ns()
        _AdaptiveSpin.noteLoad(at: now)
        #expect(_AdaptiveSpin.loaded(at: now))
        #expect(_AdaptiveSpin.window(40_000, before: nil, at: now) == _AdaptiveSpin.loadedWindow)
        #expect(_AdaptiveSpin.loadedWindow == 0)
        // Past loadMemory (and past any record another suite's sleeper makes meanwhile).
        let later = now + 10 * _AdaptiveSpin.loadMemory
        #expect(!_AdaptiveSpin.loaded(at: later))
        #expect(_AdaptiveSpin.window(40_000, before: nil, at: later) == 40_000)
    }

    @Test("a sleeper that finds its run delay above the threshold records a load")
    func sleeperRecordsLoad() {
        let readings = Readings()
        besideBusyThreadOnOneCPU {
            _ = _AdaptiveSpin.sampleLoad(at: ilk_clock_monotonic_ns())  // the first check records
            busy(for: 2 * _AdaptiveSpin.sleepCheckInterval)
            let now = ilk_clock_monotonic_ns()
            readings.values.append(_AdaptiveSpin.sampleLoad(at: now) ? 1 : 0)
            // A record made now reaches loadMemory past `now` (an older one, from another test,
            // would end sooner; a later one, from another sleeper, only later).
            let until = ilk_atomic_load_i64(ilk_spin_loaded_until(), ILK_ORDER_RELAXED)
            readings.values.append(until >= now + _AdaptiveSpin.loadMemory ? 1 : 0)
        }
        #expect(
            readings.values == [1, 1],
            "sampleLoad returned \(readings.values.first ?? -1), fresh record \(readings.values.last ?? -1)")
    }

    @Test("the condition spin's window is cut by a recorded load, and by a deadline")
    func windowCuts() {
        let now = ilk_clock_monotonic_ns()
        let later = now + 10 * _AdaptiveSpin.loadMemory  // past any record made meanwhile
        #expect(_AdaptiveSpin.window(30_000, before: nil, at: later) == 30_000)
        let soon = ContinuousClock.now + .microseconds(5)
        #expect(_AdaptiveSpin.window(30_000, before: soon, at: later) <= 5_000)
    }
}
