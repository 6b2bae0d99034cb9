// EnvironmentChoice: a harness setting read from an environment variable whose value must be one
// of an enumeration's raw values (ILK_BENCH_INTERCONNECT, ILK_BENCH_PLACEMENT).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The value of the environment variable `name`, as one of `Choice`'s cases; `fallback` when
/// the variable is unset.
/// - Warning: Any other value traps, naming the variable and the values it may take.
func environmentChoice<Choice: RawRepresentable & CaseIterable>(_ name: String, default fallback: Choice) -> Choice
where Choice.RawValue == String {
    guard let raw = getenv(name) else { return fallback }
    let text = String(cString: raw)
    guard let choice = Choice(rawValue: text) else {
        let allowed = Choice.allCases.map(\.rawValue).joined(separator: ", ")
        fatalError("\(name) must be one of \(allowed), not \"\(text)\"")
    }
    return choice
}
