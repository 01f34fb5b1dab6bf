#!/usr/bin/env python3
"""A/B two herald-perf binaries: interleaved rounds, ratios per round.

    scripts/perf-ab.py ROUNDS BIN_A BIN_B -- <herald-perf arguments>

Runs BIN_A and BIN_B alternately (A B, B A, A B, ...), each once per round
with `--repeat 1 --json -`, and for every row that both measured prints
each system's figure (the row's own metric: a rate for flat-out cases, p99
for paced ones, plus p50 when paced, plus the server's CPU per delivery
where the server is a process of its own) as median [min-max] over the rounds,
and B's advantage over A taken round by round (above 1: B is better).
Build BIN_A from the base commit and BIN_B from the change, e.g.

    scripts/perf-ab.py 8 /tmp/perf-base target/release/herald-perf -- \\
        fanout-all --systems herald --watchers 1000
"""
import json
import statistics
import subprocess
import sys


def run(binary, args):
    out = subprocess.run([binary, *args, "--json", "-", "--no-plots", "--repeat", "1"],
                         capture_output=True, text=True, check=True)
    rows = {}
    for r in json.loads(out.stdout)["rows"]:
        if not r.get("metric") or not r.get("rounds"):
            continue
        others = r["rounds"][0]["cpu"].get("others_cores") or 0.0
        rows[(r["case"], r["system"])] = (r, others)
    return rows


def server_cpu(row):
    """The server's CPU per delivery in the row's one round (µs), if it
    ran as a process of its own."""
    peer = row["rounds"][0].get("peer") or {}
    return peer.get("us_per_delivery")


def spread(v):
    return f"{statistics.median(v):.4g} [{min(v):.4g}-{max(v):.4g}]"


def main():
    if len(sys.argv) < 5 or sys.argv[4] != "--":
        sys.exit(__doc__)
    rounds, a, b, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[5:]
    runs = {a: [], b: []}
    for i in range(rounds):
        for binary in ((a, b) if i % 2 == 0 else (b, a)):
            runs[binary].append(run(binary, args))
    for key in runs[a][0]:
        if not all(key in x for x in runs[a] + runs[b]):
            continue
        metric = runs[a][0][key][0]["metric"]
        figures = [metric] + (["p50_us"] if metric == "p99_us" else [])
        # A server process of its own (http-fanout, apiserver-fanout): its
        # CPU per delivery too.
        if all(server_cpu(x[key][0]) for x in runs[a] + runs[b]):
            figures.append("server_us_per_delivery")
        for m in figures:
            pick = server_cpu if m == "server_us_per_delivery" else (lambda r, m=m: r[m])
            av = [pick(x[key][0]) for x in runs[a]]
            bv = [pick(x[key][0]) for x in runs[b]]
            higher = m.endswith("per_s")
            adv = [(y / x if higher else x / y) for x, y in zip(av, bv)]
            print(f"{key[0]} / {key[1]} / {m}: A {spread(av)}  B {spread(bv)}  "
                  f"B's advantage per round {spread(adv)}")
        others = max(x[key][1] for x in runs[a] + runs[b])
        print(f"  other processes, most in a round: {others:.2f} cores")


if __name__ == "__main__":
    main()
