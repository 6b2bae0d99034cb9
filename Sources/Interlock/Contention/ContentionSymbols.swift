// Frames of a contention site as text.
//
// Each site keeps two stacks: the return addresses that key it (backtrace(3), about 1 µs, taken
// on every recorded wait), and, captured once when the site is created, the Swift runtime's
// `Backtrace` of the same call (about 140 µs), which `Runtime` symbolicates from the binary's
// debug information, inlined frames and source lines included, so names appear without
// `-export-dynamic`. A frame that it cannot name falls back to dladdr(3) and the runtime's
// demangler, and then to `file+0xoffset` (a report says how to get names).
//
// Leading frames inside Interlock's own slow paths (the recorder, `_lockSlow`, closures in
// them) and the capture itself are dropped, so that a site's first frame is the primitive's
// public call (e.g. `Lock.lock()`) and then the code that waited.
//
// The per-site Backtrace table: slot i is written once, by the thread whose record created
// site i (ilk_contention.c: one creator per site), then its flag is set with a release store;
// readers load the flag with acquire before reading the slot. Slots are never cleared.
#if INTERLOCK_CONTENTION
import CInterlock
import CInterlockContention
import Runtime

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@_silgen_name("swift_demangle")
private func _swiftDemangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<Int>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

/// The runtime backtrace of each site (the file comment).
internal enum _ContentionBacktraces {
    private static let count = Int(ILK_CONTENTION_SITES) + 1
    nonisolated(unsafe) private static let slots: UnsafeMutablePointer<Backtrace?> = {
        let slots = UnsafeMutablePointer<Backtrace?>.allocate(capacity: count)
        slots.initialize(repeating: nil, count: count)
        return slots
    }()
    nonisolated(unsafe) private static let ready: UnsafeMutablePointer<UInt32> = {
        let ready = UnsafeMutablePointer<UInt32>.allocate(capacity: count)
        ready.initialize(repeating: 0, count: count)
        return ready
    }()

    /// Called once per site, by its creator.
    static func capture(for site: Int32) {
        guard site >= 0 && site < Int32(ILK_CONTENTION_SITES) else { return }
        guard let backtrace = try? Backtrace.capture(limit: Int(ILK_CONTENTION_FRAMES) + 8) else { return }
        slots[Int(site)] = backtrace
        // Release: pairs with the acquire in `backtrace(of:)`; the slot is complete before.
        ilk_atomic_store_u32(ready + Int(site), 1, ILK_ORDER_RELEASE)
    }

    static func backtrace(of site: Int32) -> Backtrace? {
        guard site >= 0 && site < Int32(ILK_CONTENTION_SITES) else { return nil }
        // Acquire: pairs with the release in `capture(for:)`.
        guard ilk_atomic_load_u32(ready + Int(site), ILK_ORDER_ACQUIRE) == 1 else { return nil }
        return slots[Int(site)]
    }
}

internal enum _ContentionSymbols {
    /// The frames of site `index`: from its runtime backtrace when it has one, else from its
    /// return addresses; internal frames dropped (the file comment).
    static func frames(site index: Int32, addresses: [UnsafeRawPointer]) -> (frames: [String], allSymbolized: Bool) {
        if let backtrace = _ContentionBacktraces.backtrace(of: index), let texts = frames(backtrace) {
            return (texts, true)
        }
        return frames(addresses)
    }

    /// The calling thread's frames now, named by the runtime (a hold warning's "released at").
    static func current() -> [String] {
        guard let backtrace = try? Backtrace.capture(limit: Int(ILK_CONTENTION_FRAMES) + 8) else { return [] }
        return frames(backtrace) ?? []
    }

    /// A runtime backtrace's frames as text, internal frames dropped; nil when none is named.
    private static func frames(_ backtrace: Backtrace) -> [String]? {
        if let symbolicated = backtrace.symbolicated(options: [.showInlineFrames, .showSourceLocations]) {
            var texts: [String] = []
            var leading = true
            for frame in symbolicated.frames {
                guard let symbol = frame.symbol else {
                    if case .truncated = frame.captured { continue }
                    if case .omittedFrames = frame.captured { continue }
                    leading = false
                    texts.append(describe(address(of: frame.captured)).text)
                    continue
                }
                let name = symbol.name
                if leading && isInternal(name, raw: symbol.rawName) { continue }
                leading = false
                if let location = symbol.sourceLocation, location.line > 0,
                    !location.path.contains("<compiler-generated>")
                {
                    let file = location.path.split(separator: "/").last.map(String.init) ?? location.path
                    texts.append("\(name) (\(file):\(location.line))")
                } else {
                    texts.append(name)
                }
            }
            if !texts.isEmpty { return texts }
        }
        return nil
    }

    private static func address(of frame: Backtrace.Frame) -> UnsafeRawPointer {
        let value = UInt(frame.originalProgramCounter) ?? 0
        return UnsafeRawPointer(bitPattern: value) ?? UnsafeRawPointer(bitPattern: 1)!
    }

    /// One frame as text, and whether a symbol named it.
    static func describe(_ address: UnsafeRawPointer) -> (text: String, symbolized: Bool) {
        var symbol: UnsafePointer<CChar>? = nil
        var path: UnsafePointer<CChar>? = nil
        var loadAddress: UnsafeRawPointer? = nil
        // A return address points after the call: look up the byte before it, inside the call.
        let inside = address - 1
        guard ilk_contention_symbol(inside, &symbol, &path, &loadAddress) != 0 else {
            return ("0x" + String(UInt(bitPattern: address), radix: 16), false)
        }
        if let symbol {
            return (demangle(symbol), true)
        }
        let file = path.map { String(cString: $0) } ?? "?"
        let base = UInt(bitPattern: loadAddress)
        let offset = UInt(bitPattern: inside) &- base
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return ("\(name)+0x" + String(offset, radix: 16), false)
    }

    static func demangle(_ symbol: UnsafePointer<CChar>) -> String {
        let length = strlen(symbol)
        guard let demangled = _swiftDemangle(symbol, length, nil, nil, 0) else {
            return String(cString: symbol)
        }
        defer { free(demangled) }
        return String(cString: demangled)
    }

    /// The frames of return addresses, outermost internal frames dropped (the file comment).
    static func frames(_ addresses: [UnsafeRawPointer]) -> (frames: [String], allSymbolized: Bool) {
        var texts: [String] = []
        var allSymbolized = true
        var leading = true
        for address in addresses {
            let (text, symbolized) = describe(address)
            if leading && isInternal(text, raw: text) { continue }
            leading = false
            texts.append(text)
            allSymbolized = allSymbolized && symbolized
        }
        return (texts, allSymbolized)
    }

    /// Interlock's own slow-path frames and the capture's: a `_`-prefixed type or member of
    /// Interlock (`_MutexWord._lockSlowProfiled`, `_Contention.end`), the C shim, or the runtime's
    /// `Backtrace.capture`.
    static func isInternal(_ name: String, raw: String) -> Bool {
        if name.hasPrefix("ilk_") || raw.hasPrefix("ilk_") { return true }
        if name.contains("Backtrace.capture") { return true }
        let inInterlock = raw.hasPrefix("$s9Interlock") || name.contains("Interlock.") || raw.contains("9Interlock")
        guard inInterlock else { return false }
        return name.contains("._") || name.hasPrefix("_") || name.contains(" _") || name.contains("Profiled")
    }
}
#endif
