// What the test bundles and their helper executables share: finding a helper built next to the
// running executable, and a helper's failure exit.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The executable `name` in the directory of the running one (the build directory, where
/// SwiftPM puts a test bundle's helper executables).
public func builtExecutable(named name: String) -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let me =
        length > 0
        ? String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        : CommandLine.arguments[0]
    let directory = me[..<(me.lastIndex(of: "/") ?? me.startIndex)]
    return directory + "/" + name
}

/// Prints "`program`: `message`" on standard error with one write and exits with `status`.
public func exitFailing(_ program: String, _ message: String, _ status: Int32) -> Never {
    let bytes = Array("\(program): \(message)\n".utf8)
    _ = write(2, bytes, bytes.count)
    exit(status)
}
