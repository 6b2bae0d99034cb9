// ContentionProfiling: which lock this program waits on, from where, and for how long; the
// public face of ContentionRecorder.swift (recording) and ilk_contention.c (the site table).
//
// Two switches, both needed, as for lock-order checking: the package trait ContentionProfiling
// compiles it in (without it none of this exists: no type, no call, no branch on any path);
// INTERLOCK_CONTENTION turns it on for a run (ContentionSettings.swift).
#if INTERLOCK_CONTENTION
import CInterlock
import CInterlockContention

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Contention profiling: the waits of contended acquisitions, by lock and call site.
///
/// Compile it in with the package trait `ContentionProfiling`, then switch it on for a run:
///
/// ```sh
/// swift build --traits ContentionProfiling        # or traits: ["ContentionProfiling"] on the dependency
/// INTERLOCK_CONTENTION=1 INTERLOCK_CONTENTION_REPORT=- .build/debug/MyServer
/// ```
///
/// Every blocking primitive then records each acquisition that had to wait (an uncontended one
/// records nothing): how long it waited, where from (a backtrace), and for the mutexes how long
/// the waiter then held the lock. `INTERLOCK_CONTENTION=N` records one contended wait in N, at
/// random, for a staging server; `INTERLOCK_CONTENTION_REPORT=PATH` writes ``ContentionProfile/report()``
/// to PATH and ``ContentionProfile/foldedStacks()`` to PATH.folded at exit (`-`: standard
/// error; `%p` in PATH: the process id); `INTERLOCK_HOLD_WARN_MS=N` prints a warning with backtraces, once per site, when a
/// lock taken after a recorded wait is then held longer than N ms.
///
/// Without the trait this type does not exist and the primitives carry no trace of it. With the
/// trait and the variables unset, a contended slow path makes one relaxed load; the
/// uncontended paths are unchanged.
///
/// - Note: Recording takes no global lock: sites live in one fixed lock-free table of 4,096
///   entries shared by all threads (a site that finds no room is counted in an "other" site),
///   so records outlive the threads that made them and memory stays bounded (about 1.1 MiB,
///   allocated when switched on).
public enum ContentionProfiling {
    /// Whether contended waits are being recorded: `INTERLOCK_CONTENTION` (or
    /// `INTERLOCK_HOLD_WARN_MS`) set in this process's environment.
    public static var isEnabled: Bool { _Contention.isOn }

    /// What was recorded since the process started or the last ``reset()``, sites sorted by
    /// total wait, largest first. Empty when profiling is off.
    public static func snapshot() -> ContentionProfile {
        _ = _Contention.isOn
        guard ilk_contention_enter() == 0 else {
            return ContentionProfile(sites: [], duration: .zero, samplingPeriod: 1)
        }
        defer { ilk_contention_leave() }
        return ContentionProfile._collect()
    }

    /// Forgets what was recorded: the next snapshot covers the time from now.
    public static func reset() {
        _ = _Contention.isOn
        ilk_contention_reset()
        _ContentionClock.restart()
    }

    /// Writes the report and the folded stacks where INTERLOCK_CONTENTION_REPORT says (at exit).
    static func _writeExitReport() {
        guard let template = _ContentionSettings.current.reportPath else { return }
        // "%p": the process id, so that the processes of a server (or a program and the
        // children that inherit its environment) write one report each.
        let path = template.replacing("%p", with: String(getpid()))
        let profile = snapshot()
        if path == "-" {
            _ContentionWarning.write(profile.report())
            _ContentionWarning.write(profile.foldedStacks())
            return
        }
        write(profile.report(), to: path)
        write(profile.foldedStacks(), to: path + ".folded")
    }

    private static func write(_ text: String, to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            _ContentionWarning.write("ContentionProfiling: cannot write the report to \(path): \(reason)\n")
            return
        }
        defer { close(fd) }
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else {
                    let reason = String(cString: strerror(errno))
                    _ContentionWarning.write("ContentionProfiling: writing \(path) failed: \(reason)\n")
                    return
                }
                offset += written
            }
        }
    }
}

/// Hold warnings and other messages to standard error.
internal enum _ContentionWarning {
    static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = Glibc.write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    /// INTERLOCK_HOLD_WARN_MS for a holder that took `lock` without waiting: a waiter waited
    /// `waited` ns before this release; once per release call stack.
    static func printHeldWhileWaited(_ lock: AnyObject, waited: Int64, threshold: Int64) {
        var frames = [UnsafeMutableRawPointer?](repeating: nil, count: Int(ILK_CONTENTION_FRAMES))
        let count = frames.withUnsafeMutableBufferPointer { ilk_contention_backtrace($0.baseAddress, 3) }
        let hash = frames.withUnsafeBufferPointer { ilk_contention_hash_frames($0.baseAddress, count) }
        guard ilk_contention_claim_release_warning(hash) != 0 else { return }
        let released = _ContentionSymbols.current()
        let address = "0x" + String(UInt(bitPattern: Unmanaged.passUnretained(lock).toOpaque()), radix: 16)
        let name = (lock as? _NamedLock)?.name.map { "\"\($0)\"" } ?? "at \(address)"
        var text =
            "Interlock: \(type(of: lock)) \(name) was held while a waiter waited \(ContentionProfile._format(.nanoseconds(waited)))"
        text += " (INTERLOCK_HOLD_WARN_MS=\(threshold / 1_000_000)); shown once for this release site\n"
        text += "  the holder released it at:\n"
        for frame in released { text += "    \(frame)\n" }
        write(text)
    }

    /// INTERLOCK_HOLD_WARN_MS: the hold of the site's lock, where it was taken, and where the
    /// holder releases it (the calling thread, now).
    static func printHold(site index: Int32, hold: Int64, threshold: Int64) {
        guard let description = ContentionProfile._describe(index: index) else { return }
        let released = _ContentionSymbols.current()
        var text =
            "Interlock: \(description.kind) \(description.lock) held \(ContentionProfile._format(.nanoseconds(hold)))"
        text += " (INTERLOCK_HOLD_WARN_MS=\(threshold / 1_000_000)); shown once for this site\n"
        text += "  taken after a wait at:\n"
        for frame in description.backtrace { text += "    \(frame)\n" }
        text += "  released at:\n"
        for frame in released { text += "    \(frame)\n" }
        write(text)
    }
}
#endif
