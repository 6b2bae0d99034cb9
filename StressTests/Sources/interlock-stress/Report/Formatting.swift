// Number formatting for the progress line and the table: counts with thousands separators,
// rates with SI prefixes, latencies with the unit that keeps three or four digits.

/// `12345678` → `"12,345,678"`.
func formatCount(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var out = ""
    for (offset, digit) in digits.enumerated() {
        if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
        out.append(digit)
    }
    return value < 0 ? "-" + out : out
}

/// `41_100_000` → `"41.1 M/s"`.
func formatRate(_ perSecond: Double) -> String {
    switch perSecond {
    case 1e9...: return formatFixed(perSecond / 1e9, 2) + " G/s"
    case 1e6...: return formatFixed(perSecond / 1e6, 1) + " M/s"
    case 1e3...: return formatFixed(perSecond / 1e3, 1) + " k/s"
    default: return formatFixed(perSecond, 1) + " /s"
    }
}

/// Nanoseconds with a unit and three significant digits: `"85 ns"`, `"1.06 µs"`, `"12.3 µs"`,
/// `"456 µs"`, `"4.56 ms"`, `"1.20 s"`; `"-"` when nothing was sampled.
func formatLatency(_ nanoseconds: UInt64, hasSamples: Bool = true) -> String {
    guard hasSamples else { return "-" }
    if nanoseconds < 1_000 { return "\(nanoseconds) ns" }
    let (value, unit): (Double, String) =
        nanoseconds < 1_000_000
        ? (Double(nanoseconds) / 1e3, "µs")
        : nanoseconds < 1_000_000_000
            ? (Double(nanoseconds) / 1e6, "ms")
            : (Double(nanoseconds) / 1e9, "s")
    let decimals = value < 10 ? 2 : value < 100 ? 1 : 0
    return formatFixed(value, decimals) + " " + unit
}

/// `value` with exactly `decimals` digits after the point (no Foundation needed).
func formatFixed(_ value: Double, _ decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    guard decimals > 0 else { return String(scaled) }
    let whole = scaled / Int(scale), fraction = abs(scaled % Int(scale))
    let fractionText = String(fraction)
    let sign = value < 0 && whole == 0 ? "-" : ""
    return sign + String(whole) + "." + String(repeating: "0", count: decimals - fractionText.count) + fractionText
}

/// Pads `text` on the left (`right == true`) or right to `width` characters.
func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let gap = String(repeating: " ", count: max(0, width - text.count))
    return right ? gap + text : text + gap
}
