#!/usr/bin/env python3
"""Tests of ratios.py: percentiles rebuilt from hdrhistogram-swift's encoding, grouping by the
"<Workload> / <threads> / <Contender>" convention, ratios to the fastest peer, and --limit; and
of the rows the two charts draw (chart.py, chart_loaded.py).

Run: python3 Benchmarks/Tests/ratios/test_ratios.py   (no third-party modules)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "ratios.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import ratios  # noqa: E402


def encoded_histogram(values):
    """An hdrhistogram-swift encoding (3 significant digits, unit 1) holding `values`, all
    below 2048 so that each value is its own counts index (bucket 0)."""
    counts = [0] * 4096
    for value in values:
        assert 0 < value < 2048
        counts[value] += 1
    return {"counts": counts, "_totalCount": len(values), "subBucketHalfCountMagnitude": 10,
            "unitMagnitude": 0, "maxValue": max(values), "minNonZeroValue": min(values)}


def baseline(entries, scaling=1000):
    """A results.json body: entries are (name, wall-clock values per iteration in ns) or
    (name, wall-clock values, CPU time values per iteration in ns)."""
    results = []
    for name, values, *cpu in entries:
        results.append({"target": "T", "name": name})
        metrics = [{"metric": {"wallClock": {}}, "scalingFactor": scaling,
                    "statistics": {"histogram": encoded_histogram(values)}}]
        if cpu:
            # package-benchmark's encoding of a .custom metric.
            metrics.append({"metric": {"custom": {"_0": "processCPU", "polarity": {"prefersSmaller": {}},
                                                  "useScalingFactor": True}},
                            "scalingFactor": scaling, "statistics": {"histogram": encoded_histogram(cpu[0])}})
        results.append(metrics)
    return {"baselineName": "x", "machine": {}, "results": results}


def write_baselines(directory, runs):
    """Writes each run (name: entries) as target T's baseline of that name under `directory`."""
    for name, entries in runs.items():
        folder = os.path.join(directory, "T", name)
        os.makedirs(folder)
        with open(os.path.join(folder, "results.json"), "w") as handle:
            json.dump(baseline(entries), handle)


class HistogramTests(unittest.TestCase):
    def test_percentiles_of_exact_values(self):
        h = ratios.Histogram(encoded_histogram([100, 200, 300, 400]))
        self.assertEqual(h.value_at_percentile(25), 100)
        self.assertEqual(h.value_at_percentile(50), 200)
        self.assertEqual(h.value_at_percentile(75), 300)
        self.assertEqual(h.value_at_percentile(100), 400)
        self.assertEqual(h.value_at_percentile(0), 100)

    def test_upper_buckets_report_the_highest_equivalent_value(self):
        # Index 3072 is bucket 2, sub-bucket 1024: values 4096..4099 share it.
        h = ratios.Histogram({"counts": [0] * 3072 + [1], "_totalCount": 1,
                              "subBucketHalfCountMagnitude": 10, "unitMagnitude": 0,
                              "maxValue": 4099, "minNonZeroValue": 4096})
        self.assertEqual(h.value_at_percentile(50), 4099)


class RatioTests(unittest.TestCase):
    def run_script(self, body, *args):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            with open(path, "w") as handle:
                json.dump(body, handle)
            return subprocess.run([sys.executable, SCRIPT, path, *args],
                                  capture_output=True, text=True)

    def test_ratio_is_interlock_over_fastest_peer_per_group(self):
        body = baseline([
            ("Inc / 1 thread / Interlock X", [1100] * 5),
            ("Inc / 1 thread / Peer A", [1000] * 5),
            ("Inc / 1 thread / Peer B", [2000] * 5),
            ("Inc / 2 threads / Interlock X", [900] * 5),
            ("Inc / 2 threads / Peer A", [1800] * 5),
        ])
        run = self.run_script(body)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = run.stdout
        self.assertIn("### Inc / 1 thread", out)
        self.assertIn("### Inc / 2 threads", out)
        self.assertIn("| T | Inc | 1 thread | Interlock X | 1.10 | Peer A | 1.00 | 1.100 |", out)
        self.assertIn("| T | Inc | 2 threads | Interlock X | 0.90 | Peer A | 1.80 | 0.500 |", out)
        self.assertIn("| Peer A (fastest peer) | 1.00 |", out)

    def test_cpu_ratio_is_to_the_most_frugal_peer(self):
        # Peer A is fastest but spins (CPU 1.8 ns/op); Peer B is slower and frugal (0.5).
        body = baseline([
            ("H / 2 threads / Interlock X", [900] * 5, [1000] * 5),
            ("H / 2 threads / Peer A", [1000] * 5, [1800] * 5),
            ("H / 2 threads / Peer B", [1500] * 5, [500] * 5),
        ])
        run = self.run_script(body)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("| T | H | 2 threads | Interlock X | 0.90 | Peer A | 1.00 | 0.900 | 1.00 | 2.000 |",
                      run.stdout)
        self.assertIn("| Peer B (most frugal peer) | 1.50 | 1.50 | 1.500 | 0.50 | 1.000 | 5 |", run.stdout)

    def test_cpu_columns_read_dash_without_the_metric(self):
        body = baseline([("W / 1 thread / Interlock X", [1100]), ("W / 1 thread / P", [1000])])
        run = self.run_script(body)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("| 1.100 | - | - |", run.stdout)

    def test_limit_fails_when_a_subject_exceeds_it(self):
        body = baseline([("W / 1 thread / Interlock X", [1100]), ("W / 1 thread / P", [1000])])
        self.assertEqual(self.run_script(body, "--limit", "1.05").returncode, 1)
        passing = self.run_script(body, "--limit", "1.10")
        self.assertEqual(passing.returncode, 0, passing.stderr)
        self.assertIn("| 1.100 | - | - | yes |", passing.stdout)

    def test_names_off_the_convention_are_listed_apart(self):
        body = baseline([("odd name", [500]), ("W / 1 thread / P", [1000])])
        run = self.run_script(body)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("## Not grouped", run.stdout)
        self.assertIn("- T: odd name — 0.50 ns/op", run.stdout)

    def test_reference_contenders_are_neither_subject_nor_peer(self):
        # PostgresBenchmarks: the DistributedLock row is faster than every peer but is not one,
        # and gets no ratio; PostgresLock is compared with the bare libpq row.
        entries = [
            ("tryLock+unlock / 1 thread / Interlock PostgresLock", [1200] * 3),
            ("tryLock+unlock / 1 thread / bare libpq pg_try_advisory_lock + pg_advisory_unlock", [1000] * 3),
            ("tryLock+unlock / 1 thread / Interlock DistributedLock (local disk)", [100] * 3),
        ]
        run = self.run_script(baseline(entries))
        self.assertEqual(run.returncode, 0, run.stderr)
        out = run.stdout
        self.assertIn("| T | tryLock+unlock | 1 thread | Interlock PostgresLock | 1.20 | bare libpq "
                      "pg_try_advisory_lock + pg_advisory_unlock | 1.00 | 1.200 |", out)
        self.assertIn("| bare libpq pg_try_advisory_lock + pg_advisory_unlock (fastest peer) | 1.00 |", out)
        self.assertIn("| Interlock DistributedLock (local disk) (reference, not compared) | 0.10 | 0.10 | - | - | - | 3 |",
                      out)
        self.assertNotIn("| T | tryLock+unlock | 1 thread | Interlock DistributedLock", out)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            with open(path, "w") as handle:
                json.dump(baseline(entries), handle)
            self.assertEqual(ratios.subject_ratios([path], 50.0),
                             {("T", "tryLock+unlock", "1 thread", "Interlock PostgresLock"): 1.2})

    def test_the_spinning_ring_is_no_channels_peer(self):
        # ChannelBenchmarks: ck_ring is faster than every blocking buffer but is listed for scale;
        # BoundedChannel is compared with the fastest blocking buffer.
        entries = [
            ("Channel 1P1C, capacity 64 / 2 threads / Interlock BoundedChannel", [80] * 3),
            ("Channel 1P1C, capacity 64 / 2 threads / DispatchSemaphore bounded buffer", [160] * 3),
            ("Channel 1P1C, capacity 64 / 2 threads / Concurrency Kit ck_ring (spins)", [40] * 3),
        ]
        run = self.run_script(baseline(entries))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("| T | Channel 1P1C, capacity 64 | 2 threads | Interlock BoundedChannel | 0.08 | DispatchSemaphore "
                      "bounded buffer | 0.16 | 0.500 |", run.stdout)
        self.assertIn("| Concurrency Kit ck_ring (spins) (reference, not compared) |", run.stdout)

    def test_loads_list_wall_and_cpu_ratios_per_load_and_the_worst(self):
        runs = {
            "quiet": [("H / 2 threads / Interlock X", [500], [600]), ("H / 2 threads / P", [1000], [1000])],
            "same": [("H / 2 threads / Interlock X", [1500], [900]), ("H / 2 threads / P", [1000], [300])],
        }
        with tempfile.TemporaryDirectory() as tmp:
            write_baselines(tmp, runs)
            run = subprocess.run([sys.executable, SCRIPT, "--dir", tmp, "--loads", "quiet", "same"],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("| T | H | 2 threads | Interlock X | 0.500 | 0.600 | 1.500 | 3.000 | 1.500 | 3.000 |",
                          run.stdout)

    def test_spread_lists_each_run_and_its_min_median_max(self):
        runs = {
            "r1": [("W / 2 threads / Interlock X", [900]), ("W / 2 threads / P", [1000])],
            "r2": [("W / 2 threads / Interlock X", [1200]), ("W / 2 threads / P", [1000])],
            "r3": [("W / 2 threads / Interlock X", [500]), ("W / 2 threads / P", [1000])],
        }
        with tempfile.TemporaryDirectory() as tmp:
            write_baselines(tmp, runs)
            run = subprocess.run([sys.executable, SCRIPT, "--dir", tmp, "--spread", "r1", "r2", "r3"],
                                 capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("| T | W | 2 threads | Interlock X | 0.900 | 1.200 | 0.500 | 0.500 | 0.900 | 1.200 |",
                          run.stdout)
            missing = subprocess.run([sys.executable, SCRIPT, "--dir", tmp, "--spread", "r1", "nope"],
                                     capture_output=True, text=True)
            self.assertNotEqual(missing.returncode, 0)
            self.assertIn("nope", missing.stderr)



class ChartRowsTest(unittest.TestCase):
    """chart.py's rows: families in order, design alternatives left out, a subject named when
    its group has several (skipped without matplotlib, which chart.py imports)."""

    def test_rows(self):
        try:
            import chart  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed")
        import chart
        ratios_by_key = {
            ("QueueBenchmarks", "FIFO 1P/1C", "2 threads", "Interlock LockFreeQueue"): 0.5,
            ("LocksBenchmarks", "Mutex lock+unlock", "1 thread", "Interlock Lock"): 0.8,
            ("OnceBenchmarks", "Once done", "1 thread", "Interlock Once"): 0.3,
            ("OnceBenchmarks", "Once done", "1 thread", "Interlock Lazy"): 3.0,
            ("ConditionBenchmarks", "Hand-off", "2 threads", "Interlock X (design alternative)"): 0.1,
        }
        rows = chart.chart_rows(ratios_by_key)
        self.assertEqual([row[0] for row in rows], ["Locks", "Once, Lazy", "Once, Lazy", "Queues"])
        self.assertEqual(rows[0][1:], ("Mutex lock+unlock, 1 thread", 0.8))
        self.assertEqual(sorted(row[1] for row in rows[1:3]),
                         ["Once done, 1 thread (Lazy)", "Once done, 1 thread (Once)"])


class LoadedChartTest(unittest.TestCase):
    """chart_loaded.py's reading of the interleaved runner's Markdown: the loads in file order,
    only the summary tables' rows, a subject named when a workload has several, a load missing
    for a workload left empty, ratios without a peer ("-") left out (no matplotlib needed)."""

    TEXT = """## Load: quiet

### Mutex shared counter / 2 threads

| Contender | median ns/op | range ns/op | ratio to fastest peer | CPU ns/op | CPU ratio | near | far |
|---|---:|---:|---:|---:|---:|---:|---:|
| **Interlock Lock** | 9.0 | 8-10 | 0.500 | 18.0 | 0.600 | - | - |

### Summary: Load: quiet

| Workload | Interlock contender | fastest peer | ratio | CPU ratio | paired | near | far |
|---|---|---|---:|---:|---:|---:|---:|
| Mutex shared counter / 2 threads | Interlock Lock | pthread mutex | 0.500 | 0.600 | 0.51, 9 of 9 | - | - |
| Once cold race / 4 threads | Interlock Once | Mutex | 1.200 | 0.900 | 1.1, 3 of 9 | - | - |
| Once cold race / 4 threads | Interlock Lazy | Mutex | 0.800 | 0.700 | 0.8, 7 of 9 | - | - |
| Lonely / 2 threads | Interlock Thing | - | - | - | - | - | - |

## Load: neighbour

### Summary: Load: neighbour

| Workload | Interlock contender | fastest peer | ratio | CPU ratio | paired | near | far |
|---|---|---|---:|---:|---:|---:|---:|
| Mutex shared counter / 2 threads | Interlock Lock | pthread mutex | 1.100 | 0.950 | 1.05, 4 of 9 | - | - |
"""

    def test_parse_and_rows(self):
        import chart_loaded
        rows, loads = chart_loaded.parse(self.TEXT)
        self.assertEqual(loads, ["quiet", "neighbour"])
        self.assertEqual(rows[("Mutex shared counter / 2 threads", "Interlock Lock")],
                         {"quiet": (0.5, 0.6), "neighbour": (1.1, 0.95)})
        self.assertNotIn(("Lonely / 2 threads", "Interlock Thing"), rows)
        chart = chart_loaded.chart_rows(rows, loads)
        self.assertEqual([row[0] for row in chart], ["Mutex shared counter / 2 threads",
                                                      "Once cold race / 4 threads (Once)",
                                                      "Once cold race / 4 threads (Lazy)"])
        self.assertEqual(chart[0][1], [("quiet", 0.5, 0.6), ("neighbour", 1.1, 0.95)])
        self.assertEqual(chart[1][1], [("quiet", 1.2, 0.9), None])

    def test_input_without_a_summary_fails_with_its_path(self):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as file:
            file.write("## Load: quiet\n\nnothing here\n")
        try:
            result = subprocess.run([sys.executable, os.path.join(os.path.dirname(SCRIPT), "chart_loaded.py"),
                                     file.name, "--output", file.name + ".svg"],
                                    capture_output=True, text=True)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn(file.name, result.stderr)
            self.assertFalse(os.path.exists(file.name + ".svg"))
        finally:
            os.unlink(file.name)


if __name__ == "__main__":
    unittest.main()
