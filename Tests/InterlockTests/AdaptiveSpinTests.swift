// Tests of the adaptive spin window of condition waits (Sources/Interlock/Locks/
// AdaptiveSpin.swift): the rules of its table, its bounds, and the spin itself.

import CInterlock
import Testing

@testable import Interlock

@Suite("Adaptive spin window")
struct AdaptiveSpinTests {
    /// A window word initialized to `value`, for one test.
    private final class Word: @unchecked Sendable {
        var value: UInt32
        init(_ value: UInt32) { self.value = value }
        func withPointer<R>(_ body: (UnsafeMutablePointer<UInt32>) -> R) -> R { body(&value) }
    }

    @Test("a wait satisfied while spinning moves the window 1/8 of the way toward twice its duration")
    func learnFromSpin() {
        let word = Word(40_000)
        word.withPointer { _AdaptiveSpin.learnFromSpin($0, window: 40_000, elapsed: 1_000) }
        #expect(word.value == 40_000 - (40_000 - 2_000) / 8)
        // A spin that needed longer than the window allows raises it the same way.
        let rising = Word(2_000)
        rising.withPointer { _AdaptiveSpin.learnFromSpin($0, window: 2_000, elapsed: 10_000) }
        #expect(rising.value == 2_000 + (20_000 - 2_000) / 8)
    }

    @Test("a wait woken within the maximum widens the window to cover it, with a quarter to spare")
    func learnFromShortSleep() {
        let word = Word(4_000)
        word.withPointer { _AdaptiveSpin.learnFromSleep($0, window: 4_000, waited: 20_000, woken: true, loaded: false) }
        #expect(word.value == 25_000)
        // Never narrower than it was: a quick wake-up after a wide window keeps the width.
        let wide = Word(30_000)
        wide.withPointer { _AdaptiveSpin.learnFromSleep($0, window: 30_000, waited: 8_000, woken: true, loaded: false) }
        #expect(wide.value == 30_000)
    }

    @Test("while the cores are oversubscribed, a short sleep leaves the window as it was")
    func learnFromSleepUnderLoad() {
        let word = Word(4_000)
        word.withPointer { _AdaptiveSpin.learnFromSleep($0, window: 4_000, waited: 20_000, woken: true, loaded: true) }
        #expect(word.value == 4_000)
    }

    @Test("a long sleep or a timeout halves the window, loaded or not")
    func learnFromLongSleep() {
        for loaded in [false, true] {
            let long = Word(16_000)
            long.withPointer {
                _AdaptiveSpin.learnFromSleep($0, window: 16_000, waited: 1_000_000, woken: true, loaded: loaded)
            }
            #expect(long.value == 8_000)
            let timedOut = Word(16_000)
            timedOut.withPointer {
                _AdaptiveSpin.learnFromSleep($0, window: 16_000, waited: 100, woken: false, loaded: loaded)
            }
            #expect(timedOut.value == 8_000)
        }
    }

    @Test("the window stays within its bounds")
    func bounds() {
        let low = Word(_AdaptiveSpin.minimumWindow)
        low.withPointer {
            _AdaptiveSpin.learnFromSleep(
                $0, window: _AdaptiveSpin.minimumWindow, waited: 1_000_000_000, woken: true, loaded: false)
        }
        #expect(low.value == _AdaptiveSpin.minimumWindow)
        let high = Word(40_000)
        high.withPointer {
            _AdaptiveSpin.learnFromSleep(
                $0, window: 40_000, waited: Int64(_AdaptiveSpin.maximumWindow), woken: true, loaded: false)
        }
        #expect(high.value == _AdaptiveSpin.maximumWindow)
        let tiny = Word(_AdaptiveSpin.minimumWindow)
        tiny.withPointer { _AdaptiveSpin.learnFromSpin($0, window: _AdaptiveSpin.minimumWindow, elapsed: 0) }
        #expect(tiny.value == _AdaptiveSpin.minimumWindow)
        #expect(_AdaptiveSpin.minimumWindow <= _AdaptiveSpin.initialWindow)
        #expect(_AdaptiveSpin.initialWindow <= _AdaptiveSpin.maximumWindow)
    }

    @Test("spin returns nil once the window has passed, and not before it")
    func spinTimesOut() {
        let start = ilk_clock_monotonic_ns()
        let result = _AdaptiveSpin.spin(window: 20_000, start: start) { true }
        let elapsed = ilk_clock_monotonic_ns() - start
        #expect(result == nil)
        #expect(elapsed >= 20_000, "spun \(elapsed) ns, less than the 20 us window")
        // Generous (parallel tests on 2 cores, ThreadSanitizer): catches a spin that never ends.
        #expect(elapsed < 30_000_000_000, "spun \(elapsed) ns for a 20 us window")
    }

    @Test("spin returns the time spent as soon as the condition stops holding")
    func spinNoticesChange() throws {
        var looks = 0
        let start = ilk_clock_monotonic_ns()
        let result = _AdaptiveSpin.spin(window: UInt32.max, start: start) {  // 4.3 s: never reached on a loaded machine
            looks += 1
            return looks < 3
        }
        #expect(looks == 3)
        let elapsed = try #require(result, "spin timed out")
        #expect(elapsed >= 0)
        #expect(elapsed < Int64(UInt32.max))  // returned on the change, not at the window's end
    }
}
