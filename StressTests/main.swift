// The entry point of `interlock-stress`: parse the command line, then run the chosen workloads,
// list them, or act as a child process for a workload that spawns the harness again.
//
// Exit codes (README, "Stress harness"): 0 when every invariant held, 1 when one was violated
// (or the run could not be carried out), 2 on bad arguments, with a usage message on stderr.
// ArgumentParser exits 64 (EX_USAGE) on validation errors by default, so parsing is done here
// rather than through `ParsableCommand.main()`.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

exit(StressCommand.runFromCommandLine())
