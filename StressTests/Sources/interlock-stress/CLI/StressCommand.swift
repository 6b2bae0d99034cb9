// The command line of `interlock-stress`, parsed by swift-argument-parser (`StressArguments`)
// into a `StressCommand`, the plain configuration the harness runs with:
//
//   interlock-stress [--threads N] [--seconds S] [--operations N] [--inject SEED]
//                    [--only NAME ...] [--json PATH] [--directory PATH]
//                    [--postgres CONNINFO] [--list]
//
// Hidden: `--child NAME [--child-arg ARG ...]` runs workload NAME's child entry point instead
// of the harness (see `Workload.child` and `WorkloadContext.spawnChild(arguments:)`), and
// `--watchdog-grace S`.
//
// A value option given twice keeps the last value; `--only` takes every following argument up
// to the next option and adds to earlier lists. Bad arguments exit with status 2 (the harness's
// documented status; ArgumentParser's own would be 64), after ArgumentParser's message.

import ArgumentParser
import Foundation

/// The parsed command line.
struct StressCommand: Equatable {
    var threads: Int?
    var seconds: Double = 3
    /// `--operations`: stop each workload once it has done this many operations.
    var operations: Int?
    /// `--inject`: the seed of fault injection (a harness built with it only).
    var inject: UInt64?
    var only: [String] = []
    var json: String?
    var directory: String?
    /// `--postgres`: the libpq connection string of the server the `postgres-lock` workload
    /// uses; without it that workload is skipped.
    var postgres: String?
    var list = false
    var child: String?
    /// Seconds a workload may run beyond twice its duration before it is declared hung.
    var watchdogGrace: Double = 30
    var childArguments: [String] = []

    /// More threads than this is a mistake, not a stress test (each has a stack and a histogram).
    static let maximumThreads = 4096

    /// The thread count in force: `--threads`, or twice the active processors.
    var threadCount: Int { threads ?? 2 * ProcessInfo.processInfo.activeProcessorCount }

    /// What a command line asks for.
    enum Request: Equatable {
        case help
        case run(StressCommand)
    }

    /// Parses the arguments (without the program name) and checks their values.
    /// - Throws: ``UsageError`` for the first thing wrong, which the caller prints before
    ///   exiting with ``UsageError/exitStatus``.
    static func parse(_ arguments: [String]) throws(UsageError) -> Request {
        let parsed: StressArguments
        do {
            parsed = try StressArguments.parse(arguments)
        } catch {
            if StressArguments.exitCode(for: error) == .success { return .help }
            throw UsageError(
                message: StressArguments.message(for: error), full: StressArguments.fullMessage(for: error))
        }
        var command = StressCommand()
        command.threads = parsed.threads
        command.seconds = parsed.seconds
        command.operations = parsed.operations
        command.inject = parsed.inject
        command.only = parsed.only
        command.json = parsed.json
        command.directory = parsed.directory
        command.postgres = parsed.postgres
        command.list = parsed.list
        command.child = parsed.child
        command.watchdogGrace = parsed.watchdogGrace
        command.childArguments = parsed.childArguments
        return .run(command)
    }

    /// Rejects values that parse but cannot be used: out of range, unknown names, empty paths.
    func validate() throws(UsageError) {
        if let threads, threads <= 0 || threads > Self.maximumThreads {
            throw UsageError("--threads must be an integer from 1 to \(Self.maximumThreads), not \(threads).")
        }
        if !(seconds > 0) || !seconds.isFinite {
            throw UsageError("--seconds must be a positive number of seconds, not \(seconds).")
        }
        if inject != nil && !injectionAvailable {
            throw UsageError(
                "--inject needs a harness built with fault injection: run `make stress-inject`, or build with "
                    + "`swift build -c release --scratch-path .build-inject -Xswiftc -DINTERLOCK_FAULT_INJECTION`.")
        }
        if let operations, operations <= 0 {
            throw UsageError("--operations must be a positive number of operations, not \(operations).")
        }
        let unknown = only.filter { WorkloadRegistry.workload(named: $0) == nil }
        if !unknown.isEmpty {
            throw UsageError(
                "unknown workload \(unknown.joined(separator: ", ")) in --only; known: "
                    + WorkloadRegistry.all.map(\.name).joined(separator: ", "))
        }
        if let child {
            guard let workload = WorkloadRegistry.workload(named: child) else {
                throw UsageError("--child: unknown workload \(child).")
            }
            if workload.child == nil {
                throw UsageError("--child: workload \(child) has no child mode.")
            }
        }
        if !(watchdogGrace > 0) || !watchdogGrace.isFinite {
            throw UsageError("--watchdog-grace must be a positive number of seconds, not \(watchdogGrace).")
        }
        if let json, json.isEmpty { throw UsageError("--json needs a path.") }
        if let directory, directory.isEmpty { throw UsageError("--directory needs a path.") }
    }

    // MARK: Help

    /// What `--help` prints.
    static var helpText: String { StressArguments.helpMessage(columns: 80) }
}

/// A bad command line: what `interlock-stress` prints on stderr before exiting with status 2.
struct UsageError: Error, Equatable, CustomStringConvertible {
    /// The exit status of a bad command line.
    static let exitStatus: Int32 = 2

    /// The first thing wrong, naming the option or argument.
    let message: String
    /// The whole text to print: the message, and the usage and where to find more.
    let full: String

    init(message: String, full: String) {
        self.message = message
        self.full = full
    }

    /// A check of `StressCommand.validate()` that failed, with the harness's wording.
    init(_ message: String) {
        self.init(message: message, full: "Error: \(message)")
    }

    var description: String { full }
}

/// The command line as swift-argument-parser reads it (see the file comment).
struct StressArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "interlock-stress",
        abstract: "Runs Interlock's primitives under load from many threads and checks their invariants.",
        discussion: """
            Exit status: 0 when every invariant held, 1 when one was violated, 2 on bad arguments. \
            The last line of output is `stress: N passed, M failed`.
            """)

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Worker threads per workload (default: 2 × active processors).", valueName: "n"))
    var threads: Int?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Seconds each workload runs; fractions allowed.", valueName: "seconds"))
    var seconds: Double = 3

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Stop each workload once it has done n operations in all (or at --seconds, whichever comes first); "
                + "1e8 and the like allowed.", valueName: "n"),
        transform: { text in
            guard let value = Double(text), value.isFinite, value.rounded() == value, value < 9e18 else {
                throw ValidationError("a whole number of operations is needed, such as 2500 or 1e8")
            }
            return Int(value)
        })
    var operations: Int?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Fault injection from this seed: slow paths yield or sleep at random (a harness built with it: "
                + "make stress-inject).", valueName: "seed"))
    var inject: UInt64?

    @Option(
        parsing: .upToNextOption, help: ArgumentHelp("Run only the named workloads (see --list).", valueName: "name"))
    var only: [String] = []

    @Option(help: ArgumentHelp("Also write the results as JSON to this path.", valueName: "path"))
    var json: String?

    @Option(
        help: ArgumentHelp(
            "Scratch directory for workloads that need the file system (default: a fresh temporary directory).",
            valueName: "path"))
    var directory: String?

    @Option(
        help: ArgumentHelp(
            "Run the postgres workloads against the PostgreSQL server of this libpq connection string (skipped "
                + "without it; scripts/with-postgres.sh starts a throwaway server).", valueName: "conninfo"))
    var postgres: String?

    @Flag(help: "List the workloads with a one-line description, then exit.")
    var list = false

    @Option(help: .private)
    var child: String?

    @Option(name: .customLong("watchdog-grace"), parsing: .unconditional, help: .private)
    var watchdogGrace: Double = 30

    @Option(name: .customLong("child-arg"), parsing: .unconditionalSingleValue, help: .private)
    var childArguments: [String] = []

    func validate() throws {
        var command = StressCommand()
        command.threads = threads
        command.seconds = seconds
        command.operations = operations
        command.inject = inject
        command.only = only
        command.json = json
        command.directory = directory
        command.child = child
        command.watchdogGrace = watchdogGrace
        do {
            try command.validate()
        } catch {
            throw ValidationError(error.message)
        }
    }
}
