#!/usr/bin/env python3
"""Turns fuzz/time-to-bug.sh's runs into docs/fuzzing.md's table: one row a
statement of FORMAT.md (and one for the step bugs of ukue-broken), so that
every generated and hand-made mutant is counted once, as killed in every
run, killed in some, not killed, not timed, equivalent or unreached.

    fuzz/ttb-table.py MUTANTS TSV...

MUTANTS: the output of `ukue-conformance mutants`; TSV: the TARGET.tsv files
of the runs (a later file's lines for a mutant replace an earlier's).
"""
import statistics
import sys


def main(listing, tsvs):
    kinds = {}
    for line in open(listing):
        name, kind = line.rstrip("\n").split("\t")[:2]
        kinds[name] = kind.split(":")[0]
    runs = {}
    for path in tsvs:
        seen = {}
        for line in open(path):
            name, seed, seconds, verdict = line.rstrip("\n").split("\t")[:4]
            seen.setdefault(name, []).append((seconds, verdict))
        runs.update(seen)
    rows = {}
    every_time = []
    for name, kind in kinds.items():
        if kind not in ("generated", "hand-made", "bug", "equivalent", "unreached"):
            continue
        group = "the step bugs of ukue-broken" if kind == "bug" else name.split("/")[0]
        row = rows.setdefault(group, {"all": 0, "every": 0, "some": 0, "none": 0, "untimed": 0,
                                      "equivalent": 0, "unreached": 0, "times": [], "open": []})
        row["all"] += 1
        if kind in ("equivalent", "unreached"):
            row[kind] += 1
            continue
        got = runs.get(name)
        if not got:
            row["untimed"] += 1
            row["open"].append(name + " (not timed)")
            continue
        kills = [float(s) for s, v in got if v == "killed"]
        if len(kills) == len(got) == 3:
            row["every"] += 1
            row["times"] += kills
            every_time += kills
        elif kills:
            row["some"] += 1
            row["open"].append(name + " (killed in %d of %d)" % (len(kills), len(got)))
        else:
            row["none"] += 1
            row["open"].append(name + " (not killed)")
    print("| statement | mutants | killed 3 of 3 | median, worst s | not killed | not timed | equivalent | unreached |")
    print("|---|---|---|---|---|---|---|---|")
    total = {k: 0 for k in ("all", "every", "some", "none", "untimed", "equivalent", "unreached")}
    for group in sorted(rows, key=lambda g: (g.startswith("the "), g)):
        r = rows[group]
        for k in total:
            total[k] += r[k]
        t = r["times"]
        timing = "%.1f, %.1f" % (statistics.median(t), max(t)) if t else ""
        print("| %s | %d | %d | %s | %d | %d | %d | %d |" % (
            group, r["all"], r["every"], timing, r["none"] + r["some"], r["untimed"], r["equivalent"], r["unreached"]))
    timing = "%.1f, %.1f" % (statistics.median(every_time), max(every_time)) if every_time else ""
    print("| **all** | %d | %d | %s | %d | %d | %d | %d |" % (
        total["all"], total["every"], timing, total["none"] + total["some"], total["untimed"],
        total["equivalent"], total["unreached"]))
    for group, r in rows.items():
        for name in r["open"]:
            print("open: " + name, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
