// The scheduler state of a thread of this process, for tests that must know a thread sleeps
// in the kernel (in a futex wait) before they act, so that only a wake-up can let it go on.

#if canImport(Glibc)
import Glibc
#endif

/// The scheduler state letter of thread `tid` of this process ("R", "S", ...), from
/// /proc/self/task/<tid>/stat; "?" when it cannot be read.
func threadState(_ tid: Int32) -> String {
    guard tid > 0, let file = fopen("/proc/self/task/\(tid)/stat", "r") else { return "?" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 512)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "?" }
    let line = String(nulTerminated: buffer)
    // "tid (comm) S ...": the state follows the last ')' (comm may contain spaces or parens).
    guard let close = line.lastIndex(of: ")") else { return "?" }
    let rest = line[line.index(after: close)...].drop(while: { $0 == " " })
    return rest.first.map(String.init) ?? "?"
}
