// ContentionProfile: a snapshot of the site table (ilk_contention.c) as values, and its two
// renderings: a table a person reads, and the folded stacks flame-graph tools read.
//
// Sites whose symbolised key is equal (two return addresses in one function, one lock's name
// on two objects) are merged, so each line of a report is one lock, kind and call stack.
#if INTERLOCK_CONTENTION
import CInterlock
import CInterlockContention

/// What contention profiling recorded: the contended waits by lock and call site.
///
/// Get one from ``ContentionProfiling/snapshot()``.
public struct ContentionProfile: Sendable {
    /// The contended acquisitions of one lock from one call stack.
    public struct Site: Sendable {
        /// The lock's name, or its type and address (`Lock at 0x…`).
        public var lock: String
        /// What waited: `"Lock"`, `"ReadWriteLock.read"`, `"ReadWriteLock.write"`,
        /// `"Condition.reacquire"`, `"Semaphore"`, `"Semaphore.async"`, `"BoundedChannel.send"`, ...
        public var kind: String
        /// Acquisitions that had to wait (recorded ones: with sampling, about 1 in N).
        public var contendedAcquisitions: Int
        /// The recorded waits' sum.
        public var totalWait: Duration
        /// The longest recorded wait.
        public var maxWait: Duration
        /// How long the waiters then held the lock, summed (the mutexes: `Lock`, `RecursiveLock`,
        /// `Condition`, `ConditionLock`, `Locked`; zero for the others, whose releases have no
        /// slow path to measure them on).
        public var totalHoldAfterWait: Duration
        /// How many of the waits' holds were measured (the release was seen).
        public var holdsMeasured: Int
        /// Where the waits came from: the waiting call's frames, innermost first. Task waits
        /// (`.async` kinds) are not told apart by caller: inside a task on Linux no stack walk
        /// reaches the awaiting callers, so these are the frames of the thread that resumed it.
        public var backtrace: [String]
        /// Whether every frame of `backtrace` was named by a symbol (else some read `file+0x…`).
        public var isSymbolized: Bool
    }

    /// The sites, by total wait, largest first.
    public var sites: [Site]
    /// The time the profile covers: since the process started, or since the last reset.
    public var duration: Duration
    /// One contended wait in this many was recorded (`INTERLOCK_CONTENTION=N`; 1: all).
    public var samplingPeriod: Int

    /// A table a person reads: one line per site, by total wait, with its frames under it.
    ///
    /// ```
    /// Interlock contention profile: 2.01 s, every contended wait recorded, 2 sites
    ///   total wait   waits   mean wait   max wait   held after   kind   lock
    ///   1.52 s       812     1.87 ms     9.1 ms     0.42 ms      Lock   "cache"
    ///       JobQueue.Cache.lookup(_:) -> Swift.Int
    ///       ...
    /// ```
    public func report() -> String {
        let sampling =
            samplingPeriod == 1 ? "every contended wait recorded" : "1 contended wait in \(samplingPeriod) recorded"
        var text = "Interlock contention profile: \(Self._format(duration)), \(sampling), \(sites.count) site"
        text += sites.count == 1 ? "\n" : "s\n"
        let header = ["total wait", "waits", "mean wait", "max wait", "held after", "kind", "lock"]
        var rows: [[String]] = [header]
        for site in sites {
            let mean = site.contendedAcquisitions > 0 ? site.totalWait / site.contendedAcquisitions : .zero
            let held = site.holdsMeasured > 0 ? Self._format(site.totalHoldAfterWait / site.holdsMeasured) : "-"
            rows.append([
                Self._format(site.totalWait), String(site.contendedAcquisitions), Self._format(mean),
                Self._format(site.maxWait), held, site.kind, site.lock,
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = Swift.max(widths[i], cell.count) } }
        func line(_ row: [String]) -> String {
            var out = " "
            for (i, cell) in row.enumerated() {
                out += " " + cell
                if i < row.count - 1 { out += String(repeating: " ", count: widths[i] - cell.count + 2) }
            }
            return out + "\n"
        }
        text += line(rows[0])
        for (site, row) in zip(sites, rows.dropFirst()) {
            text += line(row)
            for frame in site.backtrace.prefix(8) { text += "      \(frame)\n" }
            if site.backtrace.count > 8 { text += "      ... \(site.backtrace.count - 8) more\n" }
        }
        if samplingPeriod > 1 {
            text += "Counts and totals are of the recorded waits: multiply by \(samplingPeriod) to estimate all.\n"
        }
        if sites.contains(where: { !$0.isSymbolized }) {
            text += "Frames shown as file+0xoffset have no dynamic symbol: link with -Xlinker --export-dynamic,\n"
            text += "or name them with `addr2line -f -e FILE OFFSET | swift demangle`.\n"
        }
        return text
    }

    /// The folded stacks of the waits, the input of flame-graph tools (Brendan Gregg's
    /// `flamegraph.pl`, `inferno-flamegraph`, speedscope): one line per site,
    /// `outermost;...;innermost;[kind lock] <total wait in microseconds>`. Frames are function
    /// names without their source lines, so that one function is one box.
    public func foldedStacks() -> String {
        var totals: [String: Int] = [:]
        var order: [String] = []
        for site in sites {
            let micros = Swift.max(Int(site.totalWait / .microseconds(1)), 1)
            var frames = site.backtrace.reversed().map { Self._foldedFrame(Self._withoutLocation($0)) }
            frames.append(Self._foldedFrame("[\(site.kind) \(site.lock)]"))
            let stack = frames.joined(separator: ";")
            if totals[stack] == nil { order.append(stack) }
            totals[stack, default: 0] += micros
        }
        return order.map { "\($0) \(totals[$0]!)\n" }.joined()
    }

    /// A frame without the separators of the folded format (";" between frames, the last
    /// space before the count is the tools' own split, so spaces may stay).
    static func _foldedFrame(_ frame: String) -> String {
        String(frame.map { $0 == ";" || $0 == "\n" ? ":" : $0 })
    }

    /// `Service.lookup(_:)` of `Service.lookup(_:) (main.swift:32)`.
    static func _withoutLocation(_ frame: String) -> String {
        guard frame.hasSuffix(")"), let open = frame.lastIndex(of: "("), open > frame.startIndex else { return frame }
        let space = frame.index(before: open)
        let inside = frame[frame.index(after: open)..<frame.index(before: frame.endIndex)]
        guard frame[space] == " ", let colon = inside.lastIndex(of: ":"),
            case let digits = inside[inside.index(after: colon)...], !digits.isEmpty,
            digits.allSatisfy({ $0.isNumber })
        else { return frame }
        return String(frame[..<space])
    }

    /// `812 ns`, `1.87 ms`, `25.1 ms`, `491 ms`, `2.01 s`: three significant digits, the unit
    /// chosen after rounding (999,999 ns is `1.00 ms`).
    static func _format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        var nanos = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        if nanos < 0 { nanos = 0 }
        if nanos.rounded() < 1_000 { return "\(Int(nanos.rounded())) ns" }
        let units: [(String, Double)] = [("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
        for (index, (unit, scale)) in units.enumerated() {
            let value = nanos / scale
            let decimals = value < 9.995 ? 2 : (value < 99.95 ? 1 : 0)
            let factor = [1.0, 10.0, 100.0][decimals]
            let rounded = (value * factor).rounded() / factor
            if rounded >= 1_000 && index < units.count - 1 { continue }
            let whole = Int(rounded)
            guard decimals > 0 else { return "\(whole) \(unit)" }
            let fraction = Int(((rounded - Double(whole)) * factor).rounded())
            let digits = String(fraction)
            return "\(whole)." + String(repeating: "0", count: decimals - digits.count) + digits + " " + unit
        }
        return "\(Int(nanos / 1e9)) s"
    }

    /// The lock's description, kind and frames of the published site `index` (nil: unpublished).
    static func _describe(index: Int32) -> (lock: String, kind: String, backtrace: [String], symbolized: Bool)? {
        var site = ilk_contention_key()
        guard ilk_contention_site_key(index, &site) != 0 else { return nil }
        let kind = _ContentionKind.of(raw: site.kind)
        let kindLabel = kind?.label ?? "other"
        let addresses: [UnsafeRawPointer] = withUnsafeBytes(of: site.frames) { raw in
            let frames = raw.bindMemory(to: UnsafeRawPointer?.self)
            return frames.prefix(Int(site.frame_count)).compactMap { $0 }
        }
        let (frames, symbolized) = _ContentionSymbols.frames(site: index, addresses: addresses)
        let name = site.name.map { String(cString: $0) }
        let hex = "0x" + String(UInt(site.lock_id), radix: 16)
        let lock: String
        if kind == nil {
            lock = "(sites beyond the table's \(ILK_CONTENTION_SITES))"
        } else if site.lock_id == 0, let name {
            lock = "\"\(name)\""
        } else if let name {
            lock = "\(name) at \(hex)"
        } else {
            let type = kindLabel.split(separator: ".").first.map(String.init) ?? kindLabel
            lock = "\(type) at \(hex)"
        }
        return (lock, kindLabel, frames, symbolized)
    }

    /// Reads the table: every published site with waits, merged by symbolised key, sorted.
    static func _collect() -> ContentionProfile {
        var merged: [String: Site] = [:]
        var order: [String] = []
        for index in 0...ILK_CONTENTION_SITES {
            guard let pointer = ilk_contention_site_at(Int32(index)) else { continue }
            // Relaxed: counters (ilk_contention.c); a record in flight lands here or next time.
            let waits = ilk_atomic_load_u64(
                &UnsafeMutablePointer(mutating: pointer).pointee.acquisitions, ILK_ORDER_RELAXED)
            guard waits > 0 else { continue }
            let mutable = UnsafeMutablePointer(mutating: pointer)
            let waitNs = ilk_atomic_load_u64(&mutable.pointee.wait_ns, ILK_ORDER_RELAXED)
            let maxNs = ilk_atomic_load_u64(&mutable.pointee.max_wait_ns, ILK_ORDER_RELAXED)
            let holdNs = ilk_atomic_load_u64(&mutable.pointee.hold_ns, ILK_ORDER_RELAXED)
            let holds = ilk_atomic_load_u64(&mutable.pointee.holds, ILK_ORDER_RELAXED)
            guard let description = _describe(index: Int32(index)) else { continue }
            let key =
                description.kind + "\u{0}" + description.lock + "\u{0}"
                + description.backtrace.joined(separator: "\u{0}")
            var site =
                merged[key]
                ?? Site(
                    lock: description.lock, kind: description.kind, contendedAcquisitions: 0, totalWait: .zero,
                    maxWait: .zero, totalHoldAfterWait: .zero, holdsMeasured: 0, backtrace: description.backtrace,
                    isSymbolized: description.symbolized)
            if merged[key] == nil { order.append(key) }
            site.contendedAcquisitions += Int(waits)
            site.totalWait += .nanoseconds(Int64(clamping: waitNs))
            site.maxWait = Swift.max(site.maxWait, .nanoseconds(Int64(clamping: maxNs)))
            site.totalHoldAfterWait += .nanoseconds(Int64(clamping: holdNs))
            site.holdsMeasured += Int(holds)
            merged[key] = site
        }
        let sites = order.compactMap { merged[$0] }.sorted { $0.totalWait > $1.totalWait }
        let settings = _ContentionSettings.current
        return ContentionProfile(
            sites: settings.isOn ? sites : [], duration: _ContentionClock.elapsed, samplingPeriod: settings.period)
    }
}
#endif
