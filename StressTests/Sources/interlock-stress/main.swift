// The entry point of `interlock-stress`: parse the command line, then run the chosen workloads,
// list them, or act as a child process for a workload that spawns the harness again.
//
// Exit codes (README, "Stress harness"): 0 when every invariant held, 1 when one was violated
// (or the run could not be carried out), 2 on bad arguments, with a usage message on stderr.

import Foundation
import Interlock

let command: StressCommand
do {
    switch try StressCommand.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help:
        print(StressCommand.helpText)
        exit(0)
    case .run(let parsed):
        command = parsed
    }
} catch {
    FileHandle.standardError.write(Data((error.description + "\n").utf8))
    exit(UsageError.exitStatus)
}

if command.list {
    let width = WorkloadRegistry.all.map(\.name.count).max() ?? 0
    for workload in WorkloadRegistry.all {
        print(workload.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + workload.summary)
    }
    exit(0)
}
#if INTERLOCK_FAULT_INJECTION
if let seed = command.inject {
    Injector.install(seed: seed)
    injectionSeed = seed
}
#endif
if let child = command.child, let workload = WorkloadRegistry.workload(named: child), let entry = workload.child {
    exit(ChildMode.run(workload: workload, entry: entry, command: command))
}
if LockOrderChecking.isEnabled {
    // scripts/stress-lock-order.sh checks that this line is there: the run really was checked.
    print("lock-order checking: on")
}
#if INTERLOCK_CONTENTION
if ContentionProfiling.isEnabled {
    // scripts/stress-contention.sh checks that this line is there: the run really was profiled.
    print("contention profiling: on")
}
#endif
let selected =
    command.only.isEmpty
    ? WorkloadRegistry.all
    : WorkloadRegistry.all.filter { command.only.contains($0.name) }
let status =
    StressRunner(
        configuration: RunConfiguration(
            threads: command.threadCount, seconds: command.seconds, operations: command.operations,
            directory: command.directory,
            jsonPath: command.json, only: command.only, postgres: command.postgres,
            watchdogGrace: .nanoseconds(Int64((command.watchdogGrace * 1e9).rounded()))),
        workloads: selected
    ).run()
#if INTERLOCK_FAULT_INJECTION
if command.inject != nil { print(Injector.summary) }
#endif
exit(status)
