// Support for DistributedLock's tests: fresh temporary directories, hand-written lock records,
// and the helper executable (interlock-dlock-helper, built with the tests) run as a child.

import Foundation
import Interlock
import InterlockTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fresh directory from mkdtemp, mode 0755 (so that an unprivileged child can enter it),
/// removed with everything in it on deinit.
final class DLTempDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/interlock-dlock-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = try #require(made.map { String(cString: $0) }, "mkdtemp failed: errno \(errno)")
        chmod(path, 0o755)
    }

    deinit {
        // Make everything removable again (tests chmod things) before deleting.
        if let walker = FileManager.default.enumerator(atPath: path) {
            for case let name as String in walker { chmod(path + "/" + name, 0o755) }
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `path/name`.
    func file(_ name: String) -> String { path + "/" + name }

    /// The names in the directory, sorted.
    var entries: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }

    /// Our temporary files and tombstones left behind (there must never be any).
    var leftovers: [String] { entries.filter { $0.hasPrefix(".ilk-") } }
}

enum DLTest {
    /// This host's name as DistributedLock records it.
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, 255)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Contents of a file, or nil.
    static func read(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes `text` to `path` (created or truncated).
    static func write(_ path: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// A lock record in the documented format.
    static func record(
        pid: Int32, host: String = hostName, secondsAgo: Int64 = 0,
        token: String = "0123456789abcdef0123456789abcdef"
    ) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanos = String(format: "%09d", Int(now.tv_nsec))
        return
            "interlock-distributed-lock 1\npid=\(pid)\nhost=\(host)\ntime=\(Int64(now.tv_sec) - secondsAgo).\(nanos)\ntoken=\(token)\n"
    }

    /// lstat of `path`, or nil.
    static func lstatEntry(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }

    /// The helper executable, next to the test bundle in the build directory.
    static let helperPath = builtExecutable(named: "interlock-dlock-helper")

    /// The environment that makes DistributedLock use its NFS recipe (named temporary file)
    /// instead of O_TMPFILE.
    static let namedTemporary = ["INTERLOCK_DLOCK_NAMED_TEMPORARY=1"]

    /// Starts the helper with `arguments`, adding `environment` ("NAME=value") to ours.
    /// - Returns: its pid.
    static func spawn(_ arguments: [String], environment: [String] = []) throws -> pid_t {
        let path = helperPath
        try #require(access(path, X_OK) == 0, "helper not found at \(path); build with `swift build --build-tests`")
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        var inherited: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            inherited.append(String(cString: entry))
            cursor += 1
        }
        let envp = (inherited + environment).map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }
        let rc = posix_spawn(&pid, path, nil, nil, argv, envp)
        try #require(rc == 0, "posix_spawn \(path) failed: \(String(cString: strerror(rc)))")
        return pid
    }

    /// How a child ended.
    struct Ending: Equatable, CustomStringConvertible {
        var exitCode: Int32?
        var signal: Int32?
        var description: String { exitCode.map { "exit \($0)" } ?? "signal \(signal ?? -1)" }
    }

    /// Waits for `pid` (blocking).
    static func wait(_ pid: pid_t) -> Ending {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return ending(status)
    }

    static func ending(_ status: Int32) -> Ending {
        let signal = status & 0x7f
        return signal == 0 ? Ending(exitCode: (status >> 8) & 0xff, signal: nil) : Ending(exitCode: nil, signal: signal)
    }

    /// Waits for all of `pids`, reaping each as soon as it ends: a child that exits holding the
    /// lock must not stay a zombie, which kill(pid, 0) still reports as alive.
    static func waitAll(_ pids: [pid_t]) -> [Ending] {
        var endings = [Ending?](repeating: nil, count: pids.count)
        while endings.contains(where: { $0 == nil }) {
            var progressed = false
            for (index, pid) in pids.enumerated() where endings[index] == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    endings[index] = ending(status)
                    progressed = true
                }
            }
            if !progressed { usleep(500) }  // polling for exits, not standing in for synchronization
        }
        return endings.map { $0! }
    }

    /// Runs the helper to completion.
    static func run(_ arguments: [String], environment: [String] = []) throws -> Ending {
        wait(try spawn(arguments, environment: environment))
    }

    /// Runs `probe OP PATH` in a child with `environment` added, and returns what it wrote.
    static func probe(_ operation: String, _ path: String, output: String, environment: [String]) throws -> String {
        let ending = try run(["probe", operation, path, output], environment: environment)
        #expect(ending == Ending(exitCode: 0, signal: nil))
        return read(output) ?? "<no output>"
    }

    /// Runs `probe OP PATH` in a child, unprivileged when we are root, and returns what it wrote.
    static func probeUnprivileged(_ operation: String, _ path: String, output: String) throws -> String {
        let drop = getuid() == 0 ? ["--uid", "65534"] : []
        try write(output, "")
        chmod(output, 0o666)  // the unprivileged child cannot create files in our directory
        let ending = try run(drop + ["probe", operation, path, output])
        #expect(ending == Ending(exitCode: 0, signal: nil))
        return read(output) ?? "<no output>"
    }

    /// Checks that `log` consists of whole blocks of `steps` lines "<pid> <round> <step>", one
    /// holder at a time. - Returns: the number of blocks.
    static func checkExclusion(_ log: String, steps: Int, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        let lines = (read(log) ?? "").split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        var blocks = 0
        var index = 0
        while index < lines.count {
            let owner = lines[index].prefix(2)
            for step in 0..<steps {
                guard index + step < lines.count,
                    lines[index + step].prefix(2) == owner, lines[index + step].last == String(step)
                else {
                    Issue.record(
                        "holders interleaved at line \(index + step + 1): \(lines[min(index + step, lines.count - 1)])",
                        sourceLocation: sourceLocation)
                    return blocks
                }
            }
            index += steps
            blocks += 1
        }
        return blocks
    }
}
