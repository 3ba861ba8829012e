"""The figures of one sysbench run's output (run with --histogram=on), for the benchmark
scripts in benches/ (run as a script, or imported: figures()).

usage: sysbench_result.py OUTPUT_FILE PERCENTILE

Prints one tab-separated line:
  qps  pctl_ms  p50_ms  p95_ms  p99_ms  ignored_errors  reconnects
qps is "queries: N (X per sec.)"; pctl_ms the percentile sysbench printed itself
(--percentile=PERCENTILE, rounded by sysbench to 10 us); p50/p95/p99 are read from the
latency histogram (buckets ~1.7% wide), "nan" without one. Exits non-zero if a figure is
missing (e.g. sysbench failed before its report).
"""

import re
import sys


def figures(path, pct):
    """{qps, tps, pctl, p50, p95, p99, ignored, ignored_per_sec, reconnects} of one output."""
    text = open(path).read()

    def num(pattern):
        m = re.search(pattern, text, re.M)
        if not m:
            sys.exit("cannot find %r in %s" % (pattern, path))
        return float(m.group(1))

    buckets = [(float(v), int(c)) for v, c in re.findall(r"^\s+([\d.]+) \|[* ]*\s(\d+)$", text, re.M)]
    total = sum(c for _, c in buckets)

    def hist(q):
        """Smallest bucket value with at least q of the events at or below it."""
        acc = 0
        for v, c in buckets:
            acc += c
            if acc >= q * total:
                return v
        return float("nan")

    return {
        "qps": num(r"^\s+queries:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "tps": num(r"^\s+transactions:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "pctl": num(r"^\s+%s(?:th)? percentile:\s+([\d.]+)" % pct),
        "p50": hist(0.5), "p95": hist(0.95), "p99": hist(0.99),
        "ignored": num(r"^\s+ignored errors:\s+(\d+)"),
        "ignored_per_sec": num(r"^\s+ignored errors:\s+\d+\s+\(([\d.]+) per sec\.\)"),
        "reconnects": num(r"^\s+reconnects:\s+(\d+)"),
    }


if __name__ == "__main__":
    f = figures(sys.argv[1], sys.argv[2])
    print("\t".join(["%.2f" % f["qps"], "%.3f" % f["pctl"], "%.4f" % f["p50"], "%.4f" % f["p95"],
                     "%.4f" % f["p99"], "%d" % f["ignored"], "%d" % f["reconnects"]]))
