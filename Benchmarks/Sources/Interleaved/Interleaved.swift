// Interleaved: the waiting and lock workloads as interleaved rounds (Rounds.swift), for the rows that
// package-benchmark's back-to-back contenders make bimodal on a loaded machine. Run it beside a
// load with `make bench-interleaved` (scripts/bench-loaded.sh --interleaved), or alone:
//
//   swift run -c release Interleaved [--rounds 9] [--operations 100000] [--filter pool] [--contender Interlock]

import ArgumentParser

@main
struct Interleaved: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Waiting workloads as interleaved rounds: every contender once per round, medians reported.")

    @Option(help: "Rounds; each runs every contender of a workload once.")
    var rounds = 9

    @Option(
        help:
            "Operations per contender and round (a tenth of it for the hand-off and the fork-join, ten times it for the locks)."
    )
    var operations = 100_000

    @Option(help: "Run only the workloads whose name contains this text.")
    var filter: String?

    @Option(
        help:
            "Run only the contenders whose name contains this text (repeatable: any of them), to profile a few."
    )
    var contender: [String] = []

    @Option(help: "A heading for the output (the load it ran beside).")
    var label: String?

    @Flag(help: "List the workloads and exit.")
    var list = false

    mutating func validate() throws {
        guard rounds >= 1 else { throw ValidationError("--rounds must be at least 1, got \(rounds)") }
        guard operations >= 4 else { throw ValidationError("--operations must be at least 4, got \(operations)") }
    }

    func run() throws {
        let workloads = allWorkloads().filter { filter == nil || $0.name.contains(filter!) }.compactMap {
            workload -> Workload? in
            guard !contender.isEmpty else { return workload }
            var kept = workload
            kept.contenders = workload.contenders.filter { candidate in
                contender.contains { candidate.name.contains($0) }
            }
            return kept.contenders.isEmpty ? nil : kept
        }
        if list {
            for workload in workloads { print(workload.name) }
            return
        }
        guard !workloads.isEmpty else {
            throw ValidationError(
                "no workload's name contains '\(filter ?? "")'\(contender.isEmpty ? "" : " with a contender named like \(contender)")"
            )
        }
        if let label { print("## \(label)\n") }
        print("\(rounds) interleaved rounds per workload; medians.\n")
        var summary: [String] = []
        for workload in workloads {
            let count = Swift.max(4, Int(Double(operations) * workload.scale))
            let figures = measure(workload, rounds: rounds, operations: count)
            let (text, lines) = table(workload, figures, operations: count)
            print(text)
            summary += lines
        }
        print(summaryTable(summary, label: label))
    }
}
