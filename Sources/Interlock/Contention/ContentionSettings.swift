// What the environment asks of contention profiling, read once per process
// (ContentionProfiling.swift documents the variables; ContentionRecorder.swift uses them).
//
//   INTERLOCK_CONTENTION          unset, "", "0", "off": off; "1": every contended wait;
//                                 "N" (N > 1): one contended wait in N, at random
//   INTERLOCK_CONTENTION_REPORT   PATH: the report to PATH and the folded stacks to PATH.folded
//                                 at exit ("%p" in PATH: the process id); "-": both to
//                                 standard error
//   INTERLOCK_HOLD_WARN_MS        N > 0: a hold longer than N ms that began with a recorded wait
//                                 prints a warning, once per site; switches recording on
//                                 (every wait, unless INTERLOCK_CONTENTION samples)
//
// A value that is not one of these traps with a message naming the variable: a typo must not
// silently profile nothing.
#if INTERLOCK_CONTENTION
import CInterlock
import CInterlockContention
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

internal struct _ContentionSettings: Sendable {
    let isOn: Bool
    let period: Int
    let holdWarnMilliseconds: Int
    let reportPath: String?

    /// The process's settings; configures the C side and registers the exit report the first
    /// time (a Swift global's thread-safe lazy initialisation).
    static let current: _ContentionSettings = {
        let settings = _ContentionSettings(environment: { name in getenv(name).map { String(cString: $0) } })
        ilk_contention_configure(
            settings.isOn ? 2 : 1, UInt32(clamping: settings.period),
            Int64(settings.holdWarnMilliseconds) * 1_000_000)
        if settings.isOn && settings.reportPath != nil {
            atexit { ContentionProfiling._writeExitReport() }
        }
        return settings
    }()

    init(environment: (String) -> String?) {
        let period = Self.parse("INTERLOCK_CONTENTION", environment("INTERLOCK_CONTENTION"), offValues: true)
        let holdWarn = Self.parse("INTERLOCK_HOLD_WARN_MS", environment("INTERLOCK_HOLD_WARN_MS"), offValues: false)
        self.isOn = period > 0 || holdWarn > 0
        self.period = period > 0 ? period : 1
        self.holdWarnMilliseconds = holdWarn
        let report = environment("INTERLOCK_CONTENTION_REPORT")
        self.reportPath = (report?.isEmpty ?? true) ? nil : report
    }

    /// 0 for unset (or an off value when `offValues`), else the positive integer given.
    private static func parse(_ variable: String, _ value: String?, offValues: Bool) -> Int {
        guard let value, !value.isEmpty else { return 0 }
        if offValues && (value == "0" || value == "off") { return 0 }
        // At most a year of milliseconds: a nanosecond threshold must fit in 64 bits.
        guard let number = Int(value), number > 0, number <= 31_536_000_000 else {
            // fatalError, not preconditionFailure: -O builds drop a precondition's message.
            fatalError(
                "ContentionProfiling: \(variable)=\(value) is not "
                    + (offValues ? "1, a sampling period N > 1, 0 or off" : "a positive number of milliseconds"))
        }
        return number
    }
}

/// When the profile now being collected began (process start, or the last reset).
internal enum _ContentionClock {
    private static let started = Atomic<Int64>(ilk_contention_process_start_ns())

    static func restart() {
        // Relaxed: a timestamp for the report's "covers" line, ordered with nothing.
        started.store(ilk_clock_monotonic_ns(), ordering: .relaxed)
    }

    static var elapsed: Duration {
        // Relaxed: as in restart().
        .nanoseconds(ilk_clock_monotonic_ns() - started.load(ordering: .relaxed))
    }
}
#endif
