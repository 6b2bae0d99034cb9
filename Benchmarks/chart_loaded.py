#!/usr/bin/env python3
"""The loaded chart: Interlock against the fastest peer of each contended workload, per load.

INPUT. The Markdown that `make bench-interleaved` writes (scripts/bench-loaded.sh --interleaved:
${TMPDIR:-/tmp}/interlock-bench-<prefix>-interleaved.md): one section per load, headed
"## Load: <load>", each ending with the runner's summary table (Sources/Interleaved/Rounds.swift):

    | Workload | Interlock contender | fastest peer | ratio | CPU ratio | paired ... | near ... | far ... |

OUTPUT. An SVG (default ../docs/benchmarks-loaded.svg) beside the quiet chart (chart.py): one
group of bars per workload and Interlock contender, one bar per load in the order the file gives
them (quiet, nice 19, same priority, neighbour), each the median wall time divided by the fastest
peer's in the same run and load, on a logarithmic axis with 1.0 marked; a black tick on each bar
marks the CPU-time ratio to the most frugal peer, so that a wall win bought with CPU shows.

    chart_loaded.py INPUT [--output PATH]

Needs matplotlib, as chart.py (`make bench-chart-loaded` installs it when it is missing).
"""

import argparse
import os
import re
import sys

# The loads' names as scripts/bench-loaded.sh labels them, and what the legend says.
LOAD_LABELS = {
    "quiet": "quiet",
    "nice": "busy loops at nice 19",
    "same": "busy loops at the same priority",
    "neighbour": "neighbour process",
}


def parse(text):
    """({(workload, subject): {load: (wall, cpu)}}, [loads in file order]) from the runner's
    Markdown; rows whose ratios read "-" (no peer) are left out."""
    rows = {}
    loads = []
    load = None
    in_summary = False
    for line in text.splitlines():
        heading = re.match(r"^## (?:Load: )?(\S+)\s*$", line)
        if heading:
            load = heading.group(1)
            if load not in loads:
                loads.append(load)
            in_summary = False
            continue
        if line.startswith("### "):
            in_summary = line.startswith("### Summary")
            continue
        if not in_summary or load is None or not line.startswith("| "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] == "Workload" or cells[0].startswith("---"):
            continue
        try:
            wall, cpu = float(cells[3]), float(cells[4])
        except ValueError:
            continue
        rows.setdefault((cells[0], cells[1]), {})[load] = (wall, cpu)
    return rows, loads


def chart_rows(rows, loads):
    """[(label, [(load, wall, cpu) or None per load])] in the file's workload order."""
    subjects = {}
    for workload, subject in rows:
        subjects.setdefault(workload, []).append(subject)
    result = []
    for (workload, subject), by_load in rows.items():
        label = workload
        if len(subjects[workload]) > 1:  # name the subject when a workload has several
            label += f" ({subject.removeprefix('Interlock ')})"
        result.append((label, [(load, *by_load[load]) if load in by_load else None for load in loads]))
    return result


def draw(rows, loads, subtitle, output):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    colors = plt.get_cmap("tab10")
    band = 0.8 / max(len(loads), 1)
    figure, axes = plt.subplots(figsize=(11, 0.2 * len(rows) * len(loads) + 1.8))
    for index, (label, cells) in enumerate(rows):
        for slot, cell in enumerate(cells):
            if cell is None:
                continue
            _, wall, cpu = cell
            position = index + (slot - (len(loads) - 1) / 2) * band
            axes.barh(position, wall, height=band * 0.9, color=colors(slot % 10))
            axes.plot([cpu, cpu], [position - band * 0.45, position + band * 0.45], color="black", linewidth=1)
            text = f"{wall:.2f}" if wall >= 0.1 else f"{wall:.2g}"
            axes.text(max(wall, cpu) * 1.04, position, text, va="center", fontsize=6)
    axes.set_yticks(list(range(len(rows))), [row[0] for row in rows], fontsize=8)
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xscale("log")
    axes.axvline(1.0, color="black", linewidth=1)
    axes.set_xlabel("Interlock's wall time per operation / the fastest peer's (log scale; < 1 is faster);"
                    "\nblack tick: CPU time / the most frugal peer's")
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors(slot % 10)) for slot in range(len(loads))]
    axes.legend(handles, [LOAD_LABELS.get(load, load) for load in loads], fontsize=8, ncol=len(loads),
                loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    axes.set_title("Interlock against the fastest peer, contended workloads under four loads\n" + subtitle,
                   fontsize=10, pad=22)
    axes.grid(axis="x", which="both", linewidth=0.3)
    figure.tight_layout()
    if output.endswith(".svg"):
        figure.savefig(output, format="svg", metadata={"Date": None}, bbox_inches="tight")
    else:
        figure.savefig(output, dpi=80, bbox_inches="tight")
    plt.close(figure)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", help="the Markdown of a `make bench-interleaved` run")
    parser.add_argument("--output", default=os.path.join(here, "..", "docs", "benchmarks-loaded.svg"))
    parser.add_argument("--title", default=None, help="the subtitle (default: the input's name)")
    arguments = parser.parse_args()
    try:
        with open(arguments.input, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        sys.exit(f"chart_loaded.py: cannot read {arguments.input}: {error.strerror}")
    rows, loads = parse(text)
    if not rows:
        sys.exit(f"chart_loaded.py: {arguments.input} holds no summary table; run `make bench-interleaved` first")
    subtitle = arguments.title or f"interleaved rounds, {os.path.basename(arguments.input)}"
    os.makedirs(os.path.dirname(os.path.abspath(arguments.output)), exist_ok=True)
    draw(chart_rows(rows, loads), loads, subtitle, arguments.output)
    print(f"chart_loaded.py: {len(rows)} workloads x {len(loads)} loads -> {arguments.output}")


if __name__ == "__main__":
    main()
