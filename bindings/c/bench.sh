#!/usr/bin/env bash
# The C binding's perf case: examples/epoll_server.c (1,000 watches served
# by one epoll loop through the C ABI) against its Rust twin
# (examples/rust_twin.rs: the same loop on the Rust API, the ceiling),
# interleaved round by round. Prints median [min-max] of each and the
# per-round ratio C / Rust.
#
#   bindings/c/bench.sh [ROUNDS] [WATCHES] [CHANGES] [RATE] [PAYLOAD_BYTES]
#
# RATE 0 (the default) is flat out; a paced run (e.g. 50) gives latency
# under a steady load.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5} watches=${2:-1000} changes=${3:-60000} rate=${4:-0} payload=${5:-8}
out=target/c-bench
mkdir -p "$out"
cargo build -q --release -p herald-c --lib --example rust_twin
cc -std=c11 -D_GNU_SOURCE -O2 -I bindings/c/include bindings/c/examples/epoll_server.c \
    -o "$out/epoll_server" target/release/libherald_c.a -lpthread -ldl -lm
args=(--watches "$watches" --changes "$changes" --rate "$rate" --payload "$payload")
: > "$out/rounds.txt"
for r in $(seq 1 "$rounds"); do
    # Alternate which goes first.
    if (( r % 2 )); then order=(c rust); else order=(rust c); fi
    for sys in "${order[@]}"; do
        if [[ $sys == c ]]; then line=$("$out/epoll_server" "${args[@]}" | tail -1)
        else line=$(target/release/examples/rust_twin "${args[@]}" | tail -1); fi
        echo "round=$r system=$sys $line" | tee -a "$out/rounds.txt"
    done
done
python3 - "$out/rounds.txt" <<'PY'
import sys, statistics
rows = [dict(kv.split("=", 1) for kv in l.split()) for l in open(sys.argv[1])]
def spread(xs):
    return f"{statistics.median(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}]"
print()
print("| system | M deliveries/s | p50 µs | p99 µs | C ÷ Rust, per round |")
print("| --- | --- | --- | --- | --- |")
by = {s: [r for r in rows if r["system"] == s] for s in ("c", "rust")}
ratios = [float(c["deliveries_per_s"]) / float(r["deliveries_per_s"])
          for c, r in zip(sorted(by["c"], key=lambda x: int(x["round"])),
                          sorted(by["rust"], key=lambda x: int(x["round"])))]
for s, name in (("c", "C ABI, epoll loop"), ("rust", "Rust API (ceiling)")):
    rs = by[s]
    rate = spread([float(r["deliveries_per_s"]) / 1e6 for r in rs])
    p50 = spread([float(r["p50_us"]) for r in rs])
    p99 = spread([float(r["p99_us"]) for r in rs])
    ratio = spread(ratios) if s == "c" else "1"
    print(f"| {name} | {rate} | {p50} | {p99} | {ratio} |")
PY
