// `interlock-stress --child NAME ...`: the harness run as a child process of one of its own
// workloads (see WorkloadContext.spawnChild). Runs the workload's child entry and exits with
// what it returns; an error it throws is printed on stderr and exits 1.

import Foundation

enum ChildMode {
    /// Runs `entry` with the command's configuration; returns the exit status.
    static func run(
        workload: Workload, entry: @Sendable (ChildInvocation) throws -> Int32,
        command: StressCommand
    ) -> Int32 {
        let invocation = ChildInvocation(
            workloadName: workload.name,
            directory: command.directory ?? FileManager.default.currentDirectoryPath,
            threads: command.threadCount,
            seconds: command.seconds,
            arguments: command.childArguments)
        do {
            return try entry(invocation)
        } catch {
            FileHandle.standardError.write(Data("interlock-stress child of \(workload.name): \(error)\n".utf8))
            return 1
        }
    }
}
