// Child processes of the harness itself, for workloads that need several processes (the
// distributed lock). The child is this same executable, found through /proc/self/exe, started
// with `--child NAME ...` (see StressCommand and ChildMode).

import Foundation

/// A running child process of the harness. Its standard output is captured (keep it small: a
/// line of results); its standard error goes to the harness's, so crashes are visible.
final class ChildProcess: @unchecked Sendable {
    private let process: Process
    private let output: Pipe

    private init(process: Process, output: Pipe) {
        self.process = process
        self.output = output
    }

    /// The path of the running harness executable.
    static let executablePath: String = {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return path
        }
        #endif
        return CommandLine.arguments[0]
    }()

    /// Starts the harness executable with `arguments`.
    static func launch(arguments: [String]) throws -> ChildProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executablePath)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            throw HarnessError(description: "cannot start \(executablePath): \(error)")
        }
        return ChildProcess(process: process, output: output)
    }

    /// The child's process id.
    var processIdentifier: Int32 { process.processIdentifier }

    /// Reads the child's standard output to its end, waits for it to exit and returns its
    /// exit status (or 128 + the signal number when a signal ended it) and its output.
    func wait() -> (status: Int32, output: String) {
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let status =
            process.terminationReason == .uncaughtSignal
            ? 128 + process.terminationStatus : process.terminationStatus
        return (status, String(decoding: data, as: UTF8.self))
    }
}
