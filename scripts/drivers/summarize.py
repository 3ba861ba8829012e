#!/usr/bin/env python3
"""Counts and test names from one suite run, and the comparison table.

  summarize.py SUITE SIDE SUITE_DIR   parse SUITE_DIR/SIDE/ into counts, failed.txt, skipped.txt
  summarize.py table OUT SUITE...     the direct-vs-sluice table from OUT/SUITE/{direct,sluice}
"""
import os
import re
import sys
import xml.etree.ElementTree as ET


def pytest_junit(d):
    """PyMySQL: pytest's JUnit XML, one testcase per test."""
    res = {"passed": [], "failed": [], "skipped": []}
    for case in ET.parse(os.path.join(d, "junit.xml")).getroot().iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            res["failed"].append(name)
        elif "skipped" in kinds:
            res["skipped"].append(name)
        else:
            res["passed"].append(name)
    return res


GO_RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (\S+)")


def go_test(d):
    """go-sql-driver: `go test -v`; top-level tests only (subtests are indented)."""
    res = {"passed": [], "failed": [], "skipped": []}
    kind = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
    with open(os.path.join(d, "run.log"), errors="replace") as f:
        for line in f:
            m = GO_RESULT.match(line)
            if m:
                res[kind[m.group(1)]].append(m.group(2))
    # A panic ends the binary: the test that was running counts as failed.
    return res


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def poku(d):
    """mysql2: poku's compact reporter prints one PASS/FAIL line per test file, then
    ` PASS › n  FAIL › n  SKIP › n`. A skip() ends its file as passed, so poku's SKIP
    count is of skip() calls inside passed files and names none of them."""
    res = {"passed": [], "failed": [], "skipped": []}
    with open(os.path.join(d, "run.log"), errors="replace") as f:
        for line in f:
            line = ANSI.sub("", line).strip()
            m = re.match(r"^(PASS|FAIL)\s+(\S+\.test\.\S+)$", line)
            if m:
                res["passed" if m.group(1) == "PASS" else "failed"].append(m.group(2))
            m = re.search(r"SKIP › (\d+)", line)
            if m:
                res["skipped"] = [f"(one of {m.group(1)} skip() calls)"] * int(m.group(1))
    return res


def jdbc(d):
    """Connector/J: our own program's observations, one `name<TAB>observation` per line;
    the direct side is the reference, so a check passes through sluice when it saw the same."""
    obs = read_obs(os.path.join(d, "checks.out"))
    ref = read_obs(os.path.join(os.path.dirname(d), "direct", "checks.out"))
    res = {"passed": [], "failed": [], "skipped": []}
    for name, seen in obs.items():
        res["passed" if ref.get(name) == seen else "failed"].append(name)
    for name in ref:
        if name not in obs:
            res["failed"].append(name)
    return res


def read_obs(path):
    obs = {}
    with open(path, errors="replace") as f:
        for line in f:
            if "\t" in line:
                name, seen = line.rstrip("\n").split("\t", 1)
                obs[name] = seen
    return obs


PARSERS = {"pymysql": pytest_junit, "go": go_test, "mysql2": poku, "jdbc": jdbc}


def summarize(suite, side, suite_dir):
    d = os.path.join(suite_dir, side)
    res = PARSERS[suite](d)
    for kind in ("failed", "skipped"):
        with open(os.path.join(d, kind + ".txt"), "w") as f:
            f.writelines(n + "\n" for n in sorted(res[kind]))
    with open(os.path.join(d, "counts"), "w") as f:
        f.write(" ".join(str(len(res[k])) for k in ("passed", "failed", "skipped")) + "\n")


def read_side(out, suite, side):
    d = os.path.join(out, suite, side)
    try:
        with open(os.path.join(d, "counts")) as f:
            p, fl, s = f.read().split()
        names = {}
        for kind in ("failed", "skipped"):
            with open(os.path.join(d, kind + ".txt")) as f:
                names[kind] = {line.strip() for line in f if line.strip()}
        return (int(p), int(fl), int(s)), names
    except (OSError, ValueError):
        return None, {"failed": set(), "skipped": set()}


def table(out, suites):
    print("| suite | direct (passed/failed/skipped) | through sluice | fail only through sluice | skipped only through sluice |")
    print("|---|---|---|---|---|")
    details = []
    for suite in suites:
        dc, dn = read_side(out, suite, "direct")
        sc, sn = read_side(out, suite, "sluice")
        fmt = lambda c: "no result" if c is None else f"{c[0]} / {c[1]} / {c[2]}"
        only_f = sorted(sn["failed"] - dn["failed"])
        only_s = sorted(sn["skipped"] - dn["skipped"])
        print(f"| {suite} | {fmt(dc)} | {fmt(sc)} | {len(only_f)} | {len(only_s)} |")
        for kind, names in (("fails", only_f), ("is skipped", only_s)):
            details += [f"{suite}: {kind} only through sluice: {n}" for n in names]
        details += [f"{suite}: fails only directly: {n}" for n in sorted(dn["failed"] - sn["failed"])]
    print()
    for line in details:
        print(line)


def main(argv):
    if len(argv) >= 3 and argv[1] == "table":
        table(argv[2], argv[3:])
    elif len(argv) == 4 and argv[1] in PARSERS:
        summarize(argv[1], argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
