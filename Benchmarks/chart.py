#!/usr/bin/env python3
"""The README's benchmark chart: Interlock against the fastest peer of each workload, as ratios.

INPUT. The baseline files of one benchmark run (the same ones ratios.py reads):
.benchmarkBaselines/<Target>/<baseline>/results.json, written by `make bench-ratios`.

OUTPUT. An SVG (default ../docs/benchmarks.svg): one horizontal bar per Interlock contender and
workload, its median time per operation divided by the fastest peer's in the same run, on a
logarithmic axis with 1.0 marked (left of the line: Interlock is faster). Design alternatives
(subjects named "... (design alternative)") are left out: the chart shows what a user gets.
The subtitle names the run: the baseline and the time its newest file was written.

    chart.py [--dir DIR] [--baseline NAME] [--output PATH]

Needs matplotlib (`python3 -m pip install matplotlib`; `make bench-chart` installs it when it
is missing).
"""

import argparse
import os
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend must be chosen first)

from ratios import baseline_files, subject_ratios, threads_order  # noqa: E402

# Benchmark targets in the order the chart lists them, with the family label a reader knows.
FAMILIES = [
    ("AtomicsBenchmarks", "Atomics"),
    ("LocksBenchmarks", "Locks"),
    ("ConditionBenchmarks", "Conditions"),
    ("WaitingBenchmarks", "Semaphore, WaitGroup"),
    ("OnceBenchmarks", "Once, Lazy"),
    ("SynchronizedBenchmarks", "synchronized"),
    ("QueueBenchmarks", "Queues"),
    ("DistributedLockBenchmarks", "DistributedLock"),
    ("PostgresBenchmarks", "PostgresLock"),
]


def chart_rows(ratios):
    """[(family, label, ratio)] in display order, without design alternatives."""
    order = {target: index for index, (target, _) in enumerate(FAMILIES)}
    family = dict(FAMILIES)
    subjects = {}
    for (target, workload, threads, subject) in ratios:
        if "design alternative" not in subject:
            subjects.setdefault((target, workload, threads), []).append(subject)
    rows = []
    for (target, workload, threads, subject), ratio in ratios.items():
        if "design alternative" in subject:
            continue
        label = f"{workload}, {threads}"
        if len(subjects[(target, workload, threads)]) > 1:  # name the subject when a group has several
            label += f" ({subject.removeprefix('Interlock ')})"
        rows.append((order.get(target, len(order)), threads_order(threads), workload,
                     family.get(target, target), label, ratio))
    rows.sort(key=lambda row: (row[0], row[2], row[1]))
    return [(row[3], row[4], row[5]) for row in rows]


def draw(rows, subtitle, output):
    colors = plt.get_cmap("tab10")
    families = list(dict.fromkeys(row[0] for row in rows))
    height = 0.28 * len(rows) + 1.6
    figure, axes = plt.subplots(figsize=(9, height))
    positions = range(len(rows))
    axes.barh(list(positions), [row[2] for row in rows],
              color=[colors(families.index(row[0]) % 10) for row in rows], height=0.7)
    axes.set_yticks(list(positions), [row[1] for row in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.axvline(1.0, color="black", linewidth=1)
    axes.set_xlabel("Interlock's time per operation / the fastest peer's (log scale; < 1 is faster)")
    for position, row in zip(positions, rows):
        text = f"{row[2]:.2f}" if row[2] >= 0.1 else f"{row[2]:.2g}"
        axes.text(row[2] * 1.04, position, text, va="center", fontsize=7)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors(index % 10)) for index in range(len(families))]
    axes.legend(handles, families, fontsize=8, loc="lower right")
    axes.set_title("Interlock against the fastest peer of each workload\n" + subtitle, fontsize=10)
    axes.grid(axis="x", which="both", linewidth=0.3)
    figure.tight_layout()
    if output.endswith(".svg"):
        figure.savefig(output, format="svg", metadata={"Date": None})
    else:
        figure.savefig(output, dpi=80)
    plt.close(figure)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=os.path.join(here, ".benchmarkBaselines"))
    parser.add_argument("--baseline", default="ratios")
    parser.add_argument("--output", default=os.path.join(here, "..", "docs", "benchmarks.svg"))
    arguments = parser.parse_args()

    files = baseline_files(arguments.dir, arguments.baseline)
    if not files:
        sys.exit(f"chart.py: no baseline '{arguments.baseline}' under {arguments.dir}; "
                 "run `make bench-ratios` first")
    rows = chart_rows(subject_ratios(files, 50.0))
    if not rows:
        sys.exit("chart.py: the baseline holds no Interlock contender with a peer")
    newest = max(os.path.getmtime(path) for path in files)
    subtitle = (f"median ns/op ratios, baseline '{arguments.baseline}' of "
                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(newest))}, "
                f"{len(files)} benchmark targets")
    os.makedirs(os.path.dirname(os.path.abspath(arguments.output)), exist_ok=True)
    draw(rows, subtitle, arguments.output)
    print(f"chart.py: {len(rows)} workloads -> {arguments.output}")


if __name__ == "__main__":
    main()
