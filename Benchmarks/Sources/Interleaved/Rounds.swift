// Interleaved rounds: every contender of a workload runs once per round, in turn, for the same
// number of operations; the figures are the medians over the rounds. A load that comes and goes
// (a neighbour's burst, a scheduler's time slice) then falls on every contender alike, where
// package-benchmark runs each contender for its whole duration before the next, so that a few
// seconds of one load state decide a contender's row (the bimodal rows of "Under load").
//
// Per run: wall time (CLOCK_MONOTONIC through ContinuousClock) and the process's CPU time around
// team.round(); divided by the operations. The ratios: Interlock's median over the fastest
// (wall) and the most frugal (CPU) peer's median; and, paired by round, the median of the
// per-round ratios of Interlock's run to that peer's run of the same round, with the number of
// rounds Interlock was ahead. Runs of one round lie within a few hundred milliseconds of each
// other, so a load state that lasts longer than that falls on both runs of a pair: beside the
// neighbour, whose phases move every contender by up to a factor of 3, the medians of 5-7
// rounds put the same stack row at 0.58 and 1.39 in two runs of the same code.
//
// Every team naps when idle (ThreadTeam's idleNaps): a thread done with its share sleeps
// instead of yielding on, so that beside a load it does not take processor time from the
// threads still at work.
//
// The interconnect state (BenchmarkSupport/Interconnect.swift) is probed, untimed, before each
// run of a team of two or more threads and the run filed as near or far (a round trip below or
// above 160 ns). No run waits for a state: a loaded machine seldom offers the one asked for,
// and the far state is a real machine's too (two cores on different dies). The tables give the
// medians of each state beside the overall one, so that a ratio that flips with the state shows
// it: anything that moves lines between threads costs 3-5 times more far than near on the
// development VM, and spinning and sleeping waiters pay it differently.

import BenchmarkSupport

/// The figures of one contender over the rounds.
struct Figures {
    var wall: [Double] = []
    var cpu: [Double] = []
    /// Per run: whether the interconnect read near before it (`nil`: not probed, one thread).
    var near: [Bool?] = []

    /// The wall times of the runs that read `near` (or far).
    func wall(near state: Bool) -> [Double] {
        zip(wall, near).compactMap { $0.1 == state ? $0.0 : nil }
    }

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
    for round in 0..<rounds {
        // Each round starts one contender later than the one before: a contender's run never
        // always follows the same one (whose leftovers, a call_rcu backlog or a heap full of
        // freed chunks, would fall on it in every round), nor always opens the round.
        for offset in runs.indices {
            let index = (round + offset) % runs.count
            let run = runs[index]
            // Only the measured contender's team exists while it runs: parked helpers spin and
            // yield, which would load the machine for the others (a first version that kept
            // every team started read 6,347 ns per Semaphore hand-off, against 219 in the tables).
            run.team.start()
            let near = run.team.probeRoundTrip().map { $0 < InterconnectState.threshold }
            let cpuStart = processCPUNanoseconds()
            let elapsed = clock.measure { run.team.round() }
            let cpu = processCPUNanoseconds() - cpuStart
            run.team.stop()
            run.check()
            let wall = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            figures[index].wall.append(wall / Double(operations))
            figures[index].cpu.append(Double(cpu) / Double(operations))
            figures[index].near.append(near)
        }
    }
    return figures
}

/// The workload's table, in the layout of ratios.py's (Markdown), and one summary line per
/// Interlock contender (workload, contender, ratios overall, near and far).
func table(_ workload: Workload, _ figures: [Figures], operations: Int) -> (table: String, summary: [String]) {
    let medians = figures.map { (wall: Figures.median($0.wall), cpu: Figures.median($0.cpu)) }
    // Peers with the contender's guarantees; an unlike reference (a channel that spins and never
    // blocks) is listed with its figures but is nobody's fastest peer.
    let peers = workload.contenders.indices.filter {
        !workload.contenders[$0].isInterlock && !workload.contenders[$0].isUnlike
    }
    let fastest = peers.min { medians[$0].wall < medians[$1].wall }
    let frugal = peers.min { medians[$0].cpu < medians[$1].cpu }
    // The medians of the near and the far runs, and the ratios within each state.
    let byState = [true, false].map { state in figures.map { Figures.median($0.wall(near: state)) } }
    let fastestByState = byState.map { medians in
        peers.filter { medians[$0].isFinite }.min { medians[$0] < medians[$1] }
    }
    var lines = [
        "### \(workload.name)", "", "\(figures.first?.wall.count ?? 0) rounds of \(operations) operations.", "",
        "| Contender | median ns/op | range ns/op | ratio to fastest peer | CPU ns/op | CPU ratio to most frugal peer "
            + "| near: median (runs), ratio | far: median (runs), ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    var summary: [String] = []
    for (index, contender) in workload.contenders.enumerated() {
        var name = contender.isInterlock ? "**\(contender.name)**" : contender.name
        if index == fastest { name += " (fastest peer)" }
        let ratio = fastest.map { format(medians[index].wall / medians[$0].wall, digits: 3) } ?? "-"
        let cpuRatio = frugal.map { format(medians[index].cpu / medians[$0].cpu, digits: 3) } ?? "-"
        let range = "\(format(figures[index].wall.min() ?? .nan))-\(format(figures[index].wall.max() ?? .nan))"
        let states = [true, false].enumerated().map { stateIndex, state in
            let runs = figures[index].wall(near: state).count
            guard runs > 0 else { return "-" }
            let median = byState[stateIndex][index]
            let stateRatio =
                fastestByState[stateIndex].map { format(median / byState[stateIndex][$0], digits: 3) } ?? "-"
            return "\(format(median)) (\(runs)), \(stateRatio)"
        }
        lines.append(
            "| \(name) | \(format(medians[index].wall)) | \(range) | \(ratio) | \(format(medians[index].cpu)) | \(cpuRatio) "
                + "| \(states[0]) | \(states[1]) |"
        )
        if contender.isInterlock {
            let peer = fastest.map { workload.contenders[$0].name } ?? "-"
            let paired = fastest.map { pairedRatio(figures[index], figures[$0]) } ?? "-"
            summary.append(
                "| \(workload.name) | \(contender.name) | \(peer) | \(ratio) | \(cpuRatio) | \(paired) "
                    + "| \(states[0]) | \(states[1]) |"
            )
        }
    }
    return (lines.joined(separator: "\n") + "\n", summary)
}

/// The median of the per-round wall ratios of `subject`'s run to `peer`'s run of the same round,
/// and in how many rounds the subject was ahead: "0.84, 11 of 15".
func pairedRatio(_ subject: Figures, _ peer: Figures) -> String {
    let ratios = zip(subject.wall, peer.wall).map { $0 / $1 }
    let ahead = ratios.filter { $0 < 1 }.count
    return "\(format(Figures.median(ratios), digits: 3)), \(ahead) of \(ratios.count)"
}

/// The summary table: every Interlock contender's ratios, one line each.
func summaryTable(_ lines: [String], label: String?) -> String {
    [
        "### Summary\(label.map { ": \($0)" } ?? "")", "",
        "| Workload | Interlock contender | fastest peer | ratio | CPU ratio | paired by round: median ratio, ahead "
            + "| near: median (runs), ratio | far: median (runs), ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ].joined(separator: "\n") + "\n" + lines.joined(separator: "\n") + "\n"
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
