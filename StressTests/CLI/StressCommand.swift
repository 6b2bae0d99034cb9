// The command line of `interlock-stress`, declared with swift-argument-parser.
//
//   interlock-stress [--threads N] [--seconds S] [--only NAME ...] [--json PATH]
//                    [--directory PATH] [--list]
//
// Hidden: `--child NAME [--child-arg ARG ...]` runs workload NAME's child entry point instead
// of the harness (see `Workload.child` and `WorkloadContext.spawnChild(arguments:)`).

import ArgumentParser
import Foundation

/// The parsed command line. `validate()` rejects every bad value, so that one exit path
/// (`runFromCommandLine`) turns each of them into a usage message and exit code 2.
struct StressCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "interlock-stress",
        abstract: "Runs Interlock's primitives under load from many threads and checks their invariants.",
        discussion: """
            Exit status: 0 when every invariant held, 1 when one was violated, 2 on bad arguments.
            The last line of output is `stress: N passed, M failed`.
            """
    )

    // `.unconditional` so that `--threads -3` reaches `validate()` and its message.
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Worker threads per workload (default: 2 × active processors).", valueName: "n"))
    var threads: Int?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Seconds each workload runs; fractions allowed.", valueName: "seconds"))
    var seconds: Double = 3

    @Option(
        name: .long, parsing: .upToNextOption,
        help: ArgumentHelp("Run only the named workloads (see --list).", valueName: "name"))
    var only: [String] = []

    @Option(name: .long, help: ArgumentHelp("Also write the results as JSON to this path.", valueName: "path"))
    var json: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Scratch directory for workloads that need the file system "
                + "(default: a fresh temporary directory).", valueName: "path"))
    var directory: String?

    @Flag(name: .long, help: "List the workloads with a one-line description, then exit.")
    var list = false

    @Option(name: .long, help: .private)
    var child: String?

    /// Seconds a workload may run beyond twice its duration before it is declared hung.
    @Option(name: .customLong("watchdog-grace"), parsing: .unconditional, help: .private)
    var watchdogGrace: Double = 30

    @Option(name: .customLong("child-arg"), parsing: .unconditionalSingleValue, help: .private)
    var childArguments: [String] = []

    /// More threads than this is a mistake, not a stress test (each has a stack and a histogram).
    static let maximumThreads = 4096

    /// The thread count in force: `--threads`, or twice the active processors.
    var threadCount: Int { threads ?? 2 * ProcessInfo.processInfo.activeProcessorCount }

    func validate() throws {
        if let threads, threads <= 0 || threads > Self.maximumThreads {
            throw ValidationError("--threads must be an integer from 1 to \(Self.maximumThreads), not \(threads).")
        }
        if !(seconds > 0) || !seconds.isFinite {
            throw ValidationError("--seconds must be a positive number of seconds, not \(seconds).")
        }
        let unknown = only.filter { WorkloadRegistry.workload(named: $0) == nil }
        if !unknown.isEmpty {
            throw ValidationError(
                "unknown workload \(unknown.joined(separator: ", ")) in --only; known: "
                    + WorkloadRegistry.all.map(\.name).joined(separator: ", "))
        }
        if let child {
            guard let workload = WorkloadRegistry.workload(named: child) else {
                throw ValidationError("--child: unknown workload \(child).")
            }
            if workload.child == nil {
                throw ValidationError("--child: workload \(child) has no child mode.")
            }
        }
        if !(watchdogGrace > 0) || !watchdogGrace.isFinite {
            throw ValidationError("--watchdog-grace must be a positive number of seconds, not \(watchdogGrace).")
        }
        if let json, json.isEmpty { throw ValidationError("--json needs a path.") }
        if let directory, directory.isEmpty { throw ValidationError("--directory needs a path.") }
    }

    /// Parses `CommandLine.arguments` and runs; returns the process exit status.
    static func runFromCommandLine() -> Int32 {
        let command: StressCommand
        do {
            command = try StressCommand.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            // Help and version requests are "errors" with a success exit code.
            if StressCommand.exitCode(for: error) == .success {
                print(StressCommand.fullMessage(for: error))
                return 0
            }
            FileHandle.standardError.write(Data((StressCommand.fullMessage(for: error) + "\n").utf8))
            return 2
        }
        return command.execute()
    }

    /// Runs the parsed command; returns the process exit status.
    func execute() -> Int32 {
        if list {
            let width = WorkloadRegistry.all.map(\.name.count).max() ?? 0
            for workload in WorkloadRegistry.all {
                print(workload.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + workload.summary)
            }
            return 0
        }
        if let child, let workload = WorkloadRegistry.workload(named: child), let entry = workload.child {
            return ChildMode.run(workload: workload, entry: entry, command: self)
        }
        let selected =
            only.isEmpty
            ? WorkloadRegistry.all
            : WorkloadRegistry.all.filter { only.contains($0.name) }
        return StressRunner(
            configuration: RunConfiguration(
                threads: threadCount, seconds: seconds, directory: directory, jsonPath: json,
                only: only, watchdogGrace: .nanoseconds(Int64((watchdogGrace * 1e9).rounded()))),
            workloads: selected
        ).run()
    }
}
