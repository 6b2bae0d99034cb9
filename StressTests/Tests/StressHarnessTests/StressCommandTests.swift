// The command line of interlock-stress as swift-argument-parser reads it: every option, repeated
// --only, the hidden child-process options, help, and each kind of bad command line with its
// exact message; then the built executable itself, for the exit statuses and where the text goes.

import Foundation
import Testing

@testable import interlock_stress

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("StressCommand")
struct StressCommandTests {
    /// The command `arguments` parse into; records an issue when they ask for help or are rejected.
    func command(_ arguments: [String]) -> StressCommand? {
        do throws(UsageError) {
            guard case .run(let command) = try StressCommand.parse(arguments) else {
                Issue.record("\(arguments) asked for help")
                return nil
            }
            return command
        } catch {
            Issue.record("\(arguments) rejected: \(error.message)")
            return nil
        }
    }

    /// The error `arguments` are rejected with, or nil when they are accepted.
    func usageError(_ arguments: [String]) -> UsageError? {
        do throws(UsageError) {
            _ = try StressCommand.parse(arguments)
            return nil
        } catch {
            return error
        }
    }

    @Test("no arguments: the defaults (3 seconds, 2 × processors threads, every workload)")
    func defaults() {
        let parsed = command([])
        #expect(parsed == StressCommand())
        #expect(parsed?.seconds == 3)
        #expect(parsed?.threads == nil)
        #expect(parsed?.threadCount == 2 * ProcessInfo.processInfo.activeProcessorCount)
        #expect(parsed?.only == [])
        #expect(parsed?.list == false)
        #expect(parsed?.watchdogGrace == 30)
    }

    @Test("each option stores its value, in either form: --name VALUE and --name=VALUE")
    func eachOption() {
        #expect(command(["--threads", "8"])?.threads == 8)
        #expect(command(["--threads=+8"])?.threads == 8)
        #expect(command(["--seconds", "0.25"])?.seconds == 0.25)
        #expect(command(["--seconds=1e-3"])?.seconds == 0.001)
        #expect(command(["--operations", "1e8"])?.operations == 100_000_000)
        #expect(command(["--operations=2500"])?.operations == 2_500)
        #expect(command([])?.operations == nil)
        #expect(command(["--json", "out.json"])?.json == "out.json")
        #expect(command(["--json=-"])?.json == "-")
        #expect(command(["--directory", "/mnt/nfs"])?.directory == "/mnt/nfs")
        #expect(command(["--list"])?.list == true)
        #expect(command(["--only", "semaphore-pool"])?.only == ["semaphore-pool"])
        #expect(command(["--watchdog-grace", "0.5"])?.watchdogGrace == 0.5)
        var expected = StressCommand()
        expected.threads = 2
        expected.seconds = 1.5
        expected.json = "r.json"
        expected.directory = "d"
        expected.list = true
        #expect(
            command(["--list", "--directory", "d", "--seconds", "1.5", "--json", "r.json", "--threads", "2"])
                == expected)
    }

    @Test("--only takes every name up to the next option and adds to earlier --only lists")
    func repeatedOnly() {
        let parsed = command([
            "--only", "lock-mutual-exclusion", "semaphore-pool", "--threads", "3",
            "--only", "wait-group-rounds",
        ])
        #expect(parsed?.only == ["lock-mutual-exclusion", "semaphore-pool", "wait-group-rounds"])
        #expect(parsed?.threads == 3)
    }

    @Test("a single-value option given twice keeps the last value")
    func lastValueWins() {
        #expect(command(["--threads", "2", "--threads", "3"])?.threads == 3)
        #expect(command(["--seconds", "2", "--seconds=4"])?.seconds == 4)
    }

    @Test("the child-process command line that WorkloadContext.spawnChild builds")
    func childMode() {
        let parsed = command([
            "--child", "distributed-lock-processes", "--directory", "/tmp/x/distributed-lock-processes",
            "--threads", "4", "--seconds", "0.25",
            "--child-arg", "first", "--child-arg", "--looks-like-an-option",
        ])
        #expect(parsed?.child == "distributed-lock-processes")
        #expect(parsed?.directory == "/tmp/x/distributed-lock-processes")
        #expect(parsed?.threads == 4)
        #expect(parsed?.seconds == 0.25)
        #expect(parsed?.childArguments == ["first", "--looks-like-an-option"])
    }

    @Test(
        "-h, --help and -help ask for the help wherever they stand before --",
        arguments: [["--help"], ["-h"], ["-help"], ["--threads", "4", "--help"], ["--bogus", "-h"]])
    func help(arguments: [String]) throws {
        #expect(try StressCommand.parse(arguments) == .help)
    }

    @Test("the help lists every documented option with its help and no hidden one")
    func helpText() {
        let help = StressCommand.helpText
        #expect(help.hasPrefix("OVERVIEW: Runs Interlock's primitives under load"))
        #expect(
            help.contains(
                "USAGE: interlock-stress [--threads <n>] [--seconds <seconds>] [--operations <n>] "
                    + "[--inject <seed>] [--only <name> ...] [--json <path>] [--directory <path>] "
                    + "[--postgres <conninfo>] [--list]\n"))
        #expect(
            help.contains(
                "\n  --threads <n>           Worker threads per workload (default: 2 × active\n"
                    + "                          processors).\n"))
        #expect(help.contains("                          (default: 3.0)\n"))
        #expect(help.contains("\n  -h, --help              Show help information.\n"))
        #expect(!help.contains("--child") && !help.contains("--watchdog-grace"))
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= 80 || $0.hasPrefix("USAGE: ") })
    }

    static let usageLine =
        "Usage: interlock-stress [--threads <n>] [--seconds <seconds>] [--operations <n>] "
        + "[--inject <seed>] [--only <name> ...] [--json <path>] [--directory <path>] "
        + "[--postgres <conninfo>] [--list]"

    @Test(
        "bad command lines: each rejected with a message naming the option or argument",
        arguments: [
            // Unknown options, stray arguments.
            (["--bogus"], "Unknown option '--bogus'"),
            (["-t", "3"], "Unknown option '-t'"),
            (["--bogus=3"], "Unknown option '--bogus'"),
            (["extra"], "Unexpected argument 'extra'"),
            (["--list", "extra"], "Unexpected argument 'extra'"),
            (["--", "--list"], "Unexpected argument '--list'"),
            (["--list=yes"], "The option '--list' does not take any value, but 'yes' was specified."),
            // Missing values.
            (["--threads"], "Missing value for '--threads <n>'"),
            (["--seconds", "1", "--seconds"], "Missing value for '--seconds <seconds>'"),
            (["--only"], "Missing value for '--only <name>'"),
            (["--only", "--list"], "Missing value for '--only <name>'"),
            (["--json"], "Missing value for '--json <path>'"),
            (["--json", "--list"], "Missing value for '--json <path>'"),
            (["--directory"], "Missing value for '--directory <path>'"),
            (["--child"], "Missing value for '--child'"),
            (["--child-arg"], "Missing value for '--child-arg'"),
            // Values that are not numbers, or not integers.
            (["--threads", "x"], "The value 'x' is invalid for '--threads <n>'"),
            (["--threads", "3.5"], "The value '3.5' is invalid for '--threads <n>'"),
            (["--threads", "99999999999999999999"], "The value '99999999999999999999' is invalid for '--threads <n>'"),
            (["--threads="], "Missing value for '--threads <n>'"),
            (["--seconds", "abc"], "The value 'abc' is invalid for '--seconds <seconds>'"),
            (
                ["--operations", "1.5"],
                "The value '1.5' is invalid for '--operations <n>': a whole number of operations is needed, such as 2500 or 1e8"
            ),
            (
                ["--operations", "x"],
                "The value 'x' is invalid for '--operations <n>': a whole number of operations is needed, such as 2500 or 1e8"
            ),
            (["--operations", "0"], "--operations must be a positive number of operations, not 0."),
            (["--inject", "x"], "The value 'x' is invalid for '--inject <seed>'"),
            (
                ["--inject", "7"],
                "--inject needs a harness built with fault injection: run `make stress-inject`, or build with "
                    + "`swift build -c release --scratch-path .build-inject -Xswiftc -DINTERLOCK_FAULT_INJECTION`."
            ),
            (["--watchdog-grace", "x"], "The value 'x' is invalid for '--watchdog-grace'"),
            // Numbers out of range, names that do not exist, empty paths.
            (["--threads", "0"], "--threads must be an integer from 1 to 4096, not 0."),
            (["--threads", "-3"], "--threads must be an integer from 1 to 4096, not -3."),
            (["--threads", "4097"], "--threads must be an integer from 1 to 4096, not 4097."),
            (["--seconds", "0"], "--seconds must be a positive number of seconds, not 0.0."),
            (["--seconds", "-1"], "--seconds must be a positive number of seconds, not -1.0."),
            (["--seconds", "inf"], "--seconds must be a positive number of seconds, not inf."),
            (["--seconds", "nan"], "--seconds must be a positive number of seconds, not nan."),
            (["--watchdog-grace", "0"], "--watchdog-grace must be a positive number of seconds, not 0.0."),
            (["--json", ""], "--json needs a path."),
            (["--directory", ""], "--directory needs a path."),
            (["--child", "nope"], "--child: unknown workload nope."),
            (["--child", "lock-mutual-exclusion"], "--child: workload lock-mutual-exclusion has no child mode."),
        ])
    func rejected(arguments: [String], message: String) {
        let error = usageError(arguments)
        #expect(error?.message == message, "\(arguments)")
        #expect(error?.description.hasPrefix("Error: \(message)\n") == true)
        #expect(
            error?.description.hasSuffix(Self.usageLine + "\n  See 'interlock-stress --help' for more information.")
                == true)
    }

    @Test("an unknown --only name lists the known ones")
    func unknownWorkload() {
        let message = usageError(["--only", "lock-mutual-exclusion", "nope", "nada"])?.message ?? ""
        #expect(message.hasPrefix("unknown workload nope, nada in --only; known: atomic-increment-64, "))
        #expect(message.contains("lock-mutual-exclusion"))
    }

    @Test("a missing or invalid value shows the option's help; other errors do not")
    func optionHelpLine() {
        /// The "Help:" line of the error's text, if any.
        func helpLine(_ arguments: [String]) -> String? {
            usageError(arguments)?.full.split(separator: "\n").first { $0.hasPrefix("Help:  ") }.map(String.init)
        }
        #expect(
            helpLine(["--threads", "x"])
                == "Help:  --threads <n>  Worker threads per workload (default: 2 × active processors).")
        #expect(helpLine(["--seconds"]) == "Help:  --seconds <seconds>  Seconds each workload runs; fractions allowed.")
        #expect(helpLine(["--child"]) == nil)
        #expect(helpLine(["--threads", "0"]) == nil)
        #expect(helpLine(["--bogus"]) == nil)
    }
}

/// The built `interlock-stress` (a dependency of these tests, next to the test bundle): exit
/// statuses and streams as a script sees them.
@Suite("interlock-stress executable")
struct StressExecutableTests {
    static let executable: URL = {
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("interlock-stress")
    }()

    /// Runs the executable with `arguments`; its exit status, standard output and standard error.
    ///
    /// posix_spawn with close-on-exec pipes, not Foundation's Process: Process's pipes are
    /// inheritable, so a child that another test in this bundle spawns at the same moment (a
    /// throwaway PostgreSQL server) kept their write ends open, and reading to the end never
    /// returned (seen in a CI run: the harness had exited, the read waited for the server).
    func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        var output: [Int32] = [-1, -1]
        var error: [Int32] = [-1, -1]
        try #require(closeOnExecPipe(&output) && closeOnExecPipe(&error), "pipe2 failed: errno \(errno)")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, error[1], 2)
        let argv = ([Self.executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, Self.executable.path, &actions, nil, argv, environ)
        close(output[1])
        close(error[1])
        defer {
            close(output[0])
            close(error[0])
        }
        try #require(rc == 0, "posix_spawn \(Self.executable.path) failed: \(String(cString: strerror(rc)))")
        let (outputData, errorData) = Self.readToEnd(output[0], error[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self))
    }

    /// Reads both pipes until each ends (poll: a child that fills one while we read the other
    /// must not stall).
    static func readToEnd(_ first: Int32, _ second: Int32) -> ([UInt8], [UInt8]) {
        var data: [[UInt8]] = [[], []]
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open.contains(true) {
            var fds = [first, second].enumerated().map { index, fd in
                pollfd(fd: open[index] ? fd : -1, events: Int16(POLLIN), revents: 0)
            }
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in 0..<2 where open[index] && fds[index].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[index].fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    data[index].append(contentsOf: buffer[0..<n])
                } else if n == 0 || errno != EINTR {
                    open[index] = false
                }
            }
        }
        return (data[0], data[1])
    }

    /// pipe2(fds, O_CLOEXEC): close-on-exec from the start, so that a child another test spawns
    /// cannot inherit either end. Glibc's module map hides pipe2 (it needs _GNU_SOURCE), hence
    /// dlsym. - Returns: whether it succeeded (errno tells why not).
    func closeOnExecPipe(_ fds: inout [Int32]) -> Bool {
        typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
        guard let symbol = dlsym(nil, "pipe2") else { return false }
        let pipe2 = unsafeBitCast(symbol, to: Pipe2.self)
        return fds.withUnsafeMutableBufferPointer { pipe2($0.baseAddress!, O_CLOEXEC) } == 0
    }

    @Test(
        "bad arguments exit 2 with the message on stderr and nothing on stdout",
        arguments: [["--threads", "x"], ["--bogus"], ["--seconds"], ["--only", "nope"]])
    func badArguments(arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        #expect(result.error.hasPrefix("Error: "))
        #expect(result.error.hasSuffix("  See 'interlock-stress --help' for more information.\n"))
    }

    @Test("--help exits 0 with the help on stdout; --list exits 0 with one line per workload")
    func helpAndList() throws {
        let help = try run(["--help"])
        #expect(help.status == 0)
        #expect(help.output == StressCommand.helpText + "\n")
        #expect(help.error.isEmpty)
        let list = try run(["--list"])
        #expect(list.status == 0)
        #expect(list.output.split(separator: "\n").count == WorkloadRegistry.all.count)
    }
}
