// The command line of `interlock-stress`: its options, how they are parsed and checked, and the
// help and usage text.
//
//   interlock-stress [--threads N] [--seconds S] [--operations N] [--inject SEED]
//                    [--only NAME ...] [--json PATH] [--directory PATH]
//                    [--postgres CONNINFO] [--list]
//
// Hidden: `--child NAME [--child-arg ARG ...]` runs workload NAME's child entry point instead
// of the harness (see `Workload.child` and `WorkloadContext.spawnChild(arguments:)`), and
// `--watchdog-grace S`.
//
// Grammar: options in any order, each long (`--name VALUE` or `--name=VALUE`); a value option
// given twice keeps the last value, `--only` adds to its list and takes every following argument
// up to the next one starting with `-`. `-h`, `--help` or `-help` anywhere before `--` asks for
// the help. The wording of the help and of the errors is that of swift-argument-parser, which
// the harness used before this file, so scripts and habits carry over.

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
        let options = arguments.prefix { $0 != "--" }
        if options.contains(where: { ["-h", "--help", "-help"].contains($0) }) { return .help }
        var command = StressCommand()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--" {
                if let first = rest.first { throw UsageError("Unexpected argument '\(first)'") }
                break
            }
            guard looksLikeOption(argument) else { throw UsageError("Unexpected argument '\(argument)'") }
            let equals = argument.firstIndex(of: "=")
            let name = String(argument[..<(equals ?? argument.endIndex)])
            let attached = equals.map { String(argument[argument.index(after: $0)...]) }
            guard let option = Option.all.first(where: { $0.name == name }) else {
                throw UsageError("Unknown option '\(name)'")
            }
            var values: [String] = []
            switch (option.arity, attached) {
            case (.flag, nil):
                values = [""]
            case (.flag, let attached?):
                throw UsageError("The option '\(name)' does not take any value, but '\(attached)' was specified.")
            case (_, let attached?):
                values = [attached]
            case (.value(unconditional: true), nil):
                if let next = rest.popFirst() { values = [next] }
            case (.value(unconditional: false), nil):
                if let next = rest.first, !looksLikeOption(next) { values = [rest.removeFirst()] }
            case (.valuesUpToNextOption, nil):
                while let next = rest.first, !looksLikeOption(next) { values.append(rest.removeFirst()) }
            }
            if values.isEmpty { throw UsageError("Missing value for '\(option.label)'", about: option) }
            for value in values where !option.store(&command, value) {
                throw UsageError("The value '\(value)' is invalid for '\(option.label)'", about: option)
            }
        }
        try command.validate()
        return .run(command)
    }

    /// `true` for what the parser reads as an option name rather than a value.
    private static func looksLikeOption(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument != "-"
    }

    /// Rejects values that parse but cannot be used: out of range, unknown names, empty paths.
    private func validate() throws(UsageError) {
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
    static let helpText: String = {
        let abstract = "Runs Interlock's primitives under load from many threads and checks their invariants."
        let discussion = [
            "Exit status: 0 when every invariant held, 1 when one was violated, 2 on bad arguments.",
            "The last line of output is `stress: N passed, M failed`.",
        ]
        let rows =
            Option.all.compactMap { option in
                option.help.map { (option.label, $0 + (option.defaultText.map { " (default: \($0))" } ?? "")) }
            } + [("-h, --help", "Show help information.")]
        let optionLines = rows.flatMap { label, help in
            wrap(
                help, width: 80, indent: 26, firstLine: "  " + label.padding(toLength: 24, withPad: " ", startingAt: 0))
        }
        return
            (wrap("OVERVIEW: " + abstract, width: 80) + [""]
            + discussion.flatMap { wrap($0, width: 80) } + [""]
            + ["USAGE: " + usage, "", "OPTIONS:"] + optionLines + [""]).joined(separator: "\n")
    }()

    /// The synopsis: every visible option.
    static let usage =
        "interlock-stress "
        + Option.all.compactMap { option in
            option.help == nil
                ? nil : "[\(option.label)\(option.arity == .valuesUpToNextOption ? " ..." : "")]"
        }.joined(separator: " ")

    /// `text` broken at spaces into lines of at most `width` characters, the first starting
    /// with `firstLine`, the others indented by `indent` spaces.
    private static func wrap(_ text: String, width: Int, indent: Int = 0, firstLine: String = "") -> [String] {
        var lines: [String] = []
        var line = firstLine, lineHasWords = false
        for word in text.split(separator: " ") {
            if lineHasWords && line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineHasWords = false
            }
            line += (lineHasWords ? " " : "") + word
            lineHasWords = true
        }
        return lines + [line]
    }
}

/// A bad command line: what `interlock-stress` prints on stderr before exiting with status 2.
struct UsageError: Error, Equatable, CustomStringConvertible {
    /// The exit status of a bad command line.
    static let exitStatus: Int32 = 2

    /// The first thing wrong, naming the option or argument.
    let message: String
    /// The option whose value was missing or invalid, when it is a documented one.
    let optionHelp: String?

    fileprivate init(_ message: String, about option: Option? = nil) {
        self.message = message
        self.optionHelp = option.flatMap { option in option.help.map { "\(option.label)  \($0)" } }
    }

    /// The message, the option's help, the usage and where to find more.
    var description: String {
        (["Error: " + message] + (optionHelp.map { ["Help:  " + $0] } ?? [])
            + ["Usage: " + StressCommand.usage, "  See 'interlock-stress --help' for more information."])
            .joined(separator: "\n")
    }
}

/// One option of the command line: how it reads its value and where it stores it.
private struct Option: Sendable {
    enum Arity: Equatable {
        case flag
        /// One value; `unconditional` takes the next argument even when it starts with `-`.
        case value(unconditional: Bool)
        /// Every following argument up to the next option; at least one.
        case valuesUpToNextOption
    }

    let name: String
    let arity: Arity
    /// The value's name in the help (`<n>`); nil for a flag or a hidden option.
    var valueName: String?
    /// The help line; nil for a hidden option.
    var help: String?
    var defaultText: String?
    /// Stores one value (`""` for a flag); `false` when it is not a valid value.
    let store: @Sendable (inout StressCommand, String) -> Bool

    /// How the help and the errors name the option: `--threads <n>`, or `--child` when hidden.
    var label: String { valueName.map { "\(name) <\($0)>" } ?? name }

    static let all: [Option] = [
        Option(
            name: "--threads", arity: .value(unconditional: true), valueName: "n",
            help: "Worker threads per workload (default: 2 × active processors)."
        ) {
            $0.threads = Int($1)
            return $0.threads != nil
        },
        Option(
            name: "--seconds", arity: .value(unconditional: true), valueName: "seconds",
            help: "Seconds each workload runs; fractions allowed.", defaultText: "3.0"
        ) {
            guard let seconds = Double($1) else { return false }
            $0.seconds = seconds
            return true
        },
        Option(
            name: "--operations", arity: .value(unconditional: true), valueName: "n",
            help: "Stop each workload once it has done n operations in all (or at --seconds, "
                + "whichever comes first); 1e8 and the like allowed."
        ) {
            guard let value = Double($1), value.isFinite, value.rounded() == value, value < 9e18 else { return false }
            $0.operations = Int(value)
            return true
        },
        Option(
            name: "--inject", arity: .value(unconditional: true), valueName: "seed",
            help: "Fault injection from this seed: slow paths yield or sleep at random "
                + "(a harness built with it: make stress-inject)."
        ) {
            $0.inject = UInt64($1)
            return $0.inject != nil
        },
        Option(
            name: "--only", arity: .valuesUpToNextOption, valueName: "name",
            help: "Run only the named workloads (see --list)."
        ) {
            $0.only.append($1)
            return true
        },
        Option(
            name: "--json", arity: .value(unconditional: false), valueName: "path",
            help: "Also write the results as JSON to this path."
        ) {
            $0.json = $1
            return true
        },
        Option(
            name: "--directory", arity: .value(unconditional: false), valueName: "path",
            help: "Scratch directory for workloads that need the file system "
                + "(default: a fresh temporary directory)."
        ) {
            $0.directory = $1
            return true
        },
        Option(
            name: "--postgres", arity: .value(unconditional: false), valueName: "conninfo",
            help: "Run the postgres-lock workload against the PostgreSQL server of this libpq connection "
                + "string (skipped without it; scripts/with-postgres.sh starts a throwaway server)."
        ) {
            $0.postgres = $1
            return true
        },
        Option(
            name: "--list", arity: .flag,
            help: "List the workloads with a one-line description, then exit."
        ) { command, _ in
            command.list = true
            return true
        },
        Option(name: "--child", arity: .value(unconditional: false)) {
            $0.child = $1
            return true
        },
        Option(name: "--watchdog-grace", arity: .value(unconditional: true)) {
            guard let grace = Double($1) else { return false }
            $0.watchdogGrace = grace
            return true
        },
        Option(name: "--child-arg", arity: .value(unconditional: true)) {
            $0.childArguments.append($1)
            return true
        },
    ]
}
