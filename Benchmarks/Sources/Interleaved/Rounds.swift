// Interleaved rounds: every contender of a workload runs once per round, in turn, for the same
// number of operations; the figures are the medians over the rounds. A load that comes and goes
// (a neighbour's burst, a scheduler's time slice) then falls on every contender alike, where
// package-benchmark runs each contender for its whole duration before the next, so that a few
// seconds of one load state decide a contender's row (the bimodal rows of "Under load").
//
// Per run: wall time (CLOCK_MONOTONIC through ContinuousClock) and the process's CPU time around
// team.round(); divided by the operations. The ratios: Interlock's median over the fastest
// (wall) and the most frugal (CPU) peer's median.

import BenchmarkSupport

/// The figures of one contender over the rounds.
struct Figures {
    var wall: [Double] = []
    var cpu: [Double] = []

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }
}

/// Runs `workload` for `rounds` rounds of `operations` operations per contender.
func measure(_ workload: Workload, rounds: Int, operations: Int) -> [Figures] {
    let runs = workload.contenders.map { $0.make(operations) }
    // One unmeasured round each: pages touched, spin windows learnt.
    for run in runs {
        run.team.start()
        run.team.round()
        run.team.stop()
        run.check()
    }
    var figures = [Figures](repeating: Figures(), count: runs.count)
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        for (index, run) in runs.enumerated() {
            // Only the measured contender's team exists while it runs: parked helpers spin and
            // yield, which would load the machine for the others (a first version that kept
            // every team started read 6,347 ns per Semaphore hand-off, against 219 in the tables).
            run.team.start()
            let cpuStart = processCPUNanoseconds()
            let elapsed = clock.measure { run.team.round() }
            let cpu = processCPUNanoseconds() - cpuStart
            run.team.stop()
            run.check()
            let wall = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            figures[index].wall.append(wall / Double(operations))
            figures[index].cpu.append(Double(cpu) / Double(operations))
        }
    }
    return figures
}

/// The workload's table, in the layout of ratios.py's (Markdown).
func table(_ workload: Workload, _ figures: [Figures], operations: Int) -> String {
    let medians = figures.map { (wall: Figures.median($0.wall), cpu: Figures.median($0.cpu)) }
    let peers = workload.contenders.indices.filter { !workload.contenders[$0].isInterlock }
    let fastest = peers.min { medians[$0].wall < medians[$1].wall }
    let frugal = peers.min { medians[$0].cpu < medians[$1].cpu }
    var lines = [
        "### \(workload.name)", "", "\(figures.first?.wall.count ?? 0) rounds of \(operations) operations.", "",
        "| Contender | median ns/op | range ns/op | ratio to fastest peer | CPU ns/op | CPU ratio to most frugal peer |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for (index, contender) in workload.contenders.enumerated() {
        var name = contender.isInterlock ? "**\(contender.name)**" : contender.name
        if index == fastest { name += " (fastest peer)" }
        let ratio = fastest.map { format(medians[index].wall / medians[$0].wall, digits: 3) } ?? "-"
        let cpuRatio = frugal.map { format(medians[index].cpu / medians[$0].cpu, digits: 3) } ?? "-"
        let range = "\(format(figures[index].wall.min() ?? .nan))-\(format(figures[index].wall.max() ?? .nan))"
        lines.append(
            "| \(name) | \(format(medians[index].wall)) | \(range) | \(ratio) | \(format(medians[index].cpu)) | \(cpuRatio) |"
        )
    }
    return lines.joined(separator: "\n") + "\n"
}

/// `value` with `digits` decimals below 100 and none above (the tables' style).
func format(_ value: Double, digits: Int = 1) -> String {
    guard value.isFinite else { return "-" }
    if value >= 100 && digits == 1 { return String(Int(value.rounded())) }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    var fraction = String(scaled % Int(scale))
    while fraction.count < digits { fraction = "0" + fraction }
    return digits == 0 ? String(whole) : "\(whole).\(fraction)"
}
