#!/usr/bin/env python3
"""Turns fuzz/time-to-bug.sh's runs into docs/fuzzing.md's table: one row a
statement of FORMAT.md (and one for the step bugs of ukue-broken), so that
every generated and hand-made mutant is counted once, as killed in every
run (by ops_vs_model, or by open_bytes for those ops_vs_model cannot reach:
the `unreached`), killed in some, not killed, not timed, or equivalent.

    fuzz/ttb-table.py MUTANTS TSV...

MUTANTS: the output of `ukue-conformance mutants`; TSV: the TARGET.tsv files
of the runs, ops_vs_model's and open_bytes' (a later file's lines for a
mutant replace an earlier's).
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
        row = rows.setdefault(group, {"all": 0, "every": 0, "opening": 0, "some": 0, "none": 0, "untimed": 0,
                                      "equivalent": 0, "times": [], "otimes": [], "open": []})
        row["all"] += 1
        if kind == "equivalent":
            row["equivalent"] += 1
            continue
        got = runs.get(name)
        if not got:
            row["untimed"] += 1
            row["open"].append(name + " (not timed)")
            continue
        kills = [float(s) for s, v in got if v == "killed"]
        if len(kills) == len(got) == 3:
            # The unreached (of ops_vs_model) are open_bytes' to time.
            if kind == "unreached":
                row["opening"] += 1
                row["otimes"] += kills
            else:
                row["every"] += 1
                row["times"] += kills
        elif kills:
            row["some"] += 1
            row["open"].append(name + " (killed in %d of %d)" % (len(kills), len(got)))
        else:
            row["none"] += 1
            row["open"].append(name + " (not killed)")

    def timing(t):
        return "%.1f, %.1f" % (statistics.median(t), max(t)) if t else ""

    print("| statement | mutants | ops_vs_model: killed 3 of 3 | median, worst s "
          "| open_bytes: killed 3 of 3 | median, worst s | not killed | not timed | equivalent |")
    print("|---|---|---|---|---|---|---|---|---|")
    total = {k: 0 for k in ("all", "every", "opening", "some", "none", "untimed", "equivalent")}
    times, otimes = [], []
    for group in sorted(rows, key=lambda g: (g.startswith("the "), g)):
        r = rows[group]
        for k in total:
            total[k] += r[k]
        times += r["times"]
        otimes += r["otimes"]
        print("| %s | %d | %d | %s | %d | %s | %d | %d | %d |" % (
            group, r["all"], r["every"], timing(r["times"]), r["opening"], timing(r["otimes"]),
            r["none"] + r["some"], r["untimed"], r["equivalent"]))
    print("| **all** | %d | %d | %s | %d | %s | %d | %d | %d |" % (
        total["all"], total["every"], timing(times), total["opening"], timing(otimes),
        total["none"] + total["some"], total["untimed"], total["equivalent"]))
    for group, r in rows.items():
        for name in r["open"]:
            print("open: " + name, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
