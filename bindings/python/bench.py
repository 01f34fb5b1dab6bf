"""Herald's asyncio fan-out against Python's own, in one run.

N watchers consumed from asyncio (`async for ev in watch`, each watch
woken through the loop's one Herald eventfd), fed by a writer task in the
same loop that applies changes whose payload carries their send time
(`time.perf_counter_ns()`), against the same N consumers reading an
`asyncio.Queue` each, fed by one producer task that `put_nowait`s every
message to every queue. Rounds alternate the two systems (which goes
first alternates too); each round writes flat out for `--seconds`, in
steps of `--step` changes and a `sleep(0)`, then a last message that ends
every consumer. Reported per round and as median [min-max]: deliveries/s
(deliveries / first send to last receipt) and the p50/p99 latency from
send to receipt over every delivery; and the per-round ratio.

    python bindings/python/bench.py --watchers 1000 --rounds 5 --seconds 1
"""

import argparse
import asyncio
import statistics
import struct
import sys
import time

import herald

PACK = struct.Struct("<q")
END = b"END"


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[i]


class Round:
    def __init__(self):
        self.latencies = []
        self.deliveries = 0
        self.first_send = None
        self.last_receipt = 0
        self.changes = 0


async def consume_herald(watch, r):
    lat = r.latencies
    now = time.perf_counter_ns
    unpack = PACK.unpack_from
    n = 0
    last = 0
    async for ev in watch:
        p = ev.payload
        if p == END:
            break
        last = now()
        lat.append(last - unpack(p)[0])
        n += 1
    r.deliveries += n
    r.last_receipt = max(r.last_receipt, last)


async def consume_queue(q, r):
    lat = r.latencies
    now = time.perf_counter_ns
    unpack = PACK.unpack_from
    n = 0
    last = 0
    while True:
        p = await q.get()
        if p == END:
            break
        last = now()
        lat.append(last - unpack(p)[0])
        n += 1
    r.deliveries += n
    r.last_receipt = max(r.last_receipt, last)


async def pace(args, r, now):
    """Yields to the loop; at a fixed rate, until the next step is due."""
    if args.rate <= 0:
        await asyncio.sleep(0)
        return
    due = r.first_send + int(r.changes / args.rate * 1e9)
    await asyncio.sleep(max(0, due - now()) / 1e9)


async def round_herald(args):
    r = Round()
    engine = herald.Engine()
    writer = engine.writer()
    writer.replace([], 1)
    watches = [engine.watch(resource_version=1) for _ in range(args.watchers)]
    tasks = [asyncio.create_task(consume_herald(w, r)) for w in watches]
    await asyncio.sleep(0.2)  # every consumer is waiting
    rv = 1
    now = time.perf_counter_ns
    r.first_send = now()
    stop_at = r.first_send + int(args.seconds * 1e9)
    while now() < stop_at:
        for _ in range(args.step):
            rv += 1
            writer.apply("MODIFIED", rv, "bench", "obj", payload=PACK.pack(now()))
            r.changes += 1
        await pace(args, r, now)
    writer.apply("MODIFIED", rv + 1, "bench", "obj", payload=END)
    await asyncio.wait_for(asyncio.gather(*tasks), 300)
    engine.stop()
    return r


async def round_native(args):
    r = Round()
    queues = [asyncio.Queue() for _ in range(args.watchers)]
    tasks = [asyncio.create_task(consume_queue(q, r)) for q in queues]
    await asyncio.sleep(0.2)
    now = time.perf_counter_ns
    r.first_send = now()
    stop_at = r.first_send + int(args.seconds * 1e9)
    while now() < stop_at:
        for _ in range(args.step):
            msg = PACK.pack(now())
            for q in queues:
                q.put_nowait(msg)
            r.changes += 1
        await pace(args, r, now)
    for q in queues:
        q.put_nowait(END)
    await asyncio.wait_for(asyncio.gather(*tasks), 300)
    return r


def summarize(r, watchers):
    assert r.deliveries == r.changes * watchers, (r.deliveries, r.changes, watchers)
    elapsed = (r.last_receipt - r.first_send) / 1e9
    lat = sorted(r.latencies)
    return {
        "rate": r.deliveries / elapsed,
        "p50": percentile(lat, 0.50) / 1e6,
        "p99": percentile(lat, 0.99) / 1e6,
        "changes": r.changes,
    }


def spread(values, fmt):
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}-{fmt(max(values))}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--step", type=int, default=4, help="changes per loop step")
    ap.add_argument(
        "--rate", type=float, default=0, help="changes/s to offer (0: flat out, as fast as the writer goes)"
    )
    args = ap.parse_args()
    print(
        f"herald {herald.__version__}, Python {sys.version.split()[0]}: {args.watchers} watchers, "
        f"{args.rounds} rounds of {args.seconds}s, {args.step} changes per step, "
        f"{'flat out' if args.rate <= 0 else f'{args.rate:g} changes/s'}",
        flush=True,
    )
    results = {"herald": [], "asyncio.Queue": []}
    systems = {"herald": round_herald, "asyncio.Queue": round_native}
    for i in range(args.rounds):
        order = ["herald", "asyncio.Queue"] if i % 2 == 0 else ["asyncio.Queue", "herald"]
        for name in order:
            s = summarize(asyncio.run(systems[name](args)), args.watchers)
            results[name].append(s)
            print(
                f"round {i + 1} {name:>14}: {s['rate'] / 1e6:6.3f} M deliveries/s "
                f"({s['changes']} changes), p50 {s['p50']:7.2f} ms, p99 {s['p99']:7.2f} ms",
                flush=True,
            )
    print()
    m = lambda v: f"{v / 1e6:.3f}"
    ms = lambda v: f"{v:.2f}"
    for name, rs in results.items():
        print(
            f"{name:>14}: {spread([s['rate'] for s in rs], m)} M deliveries/s, "
            f"p50 {spread([s['p50'] for s in rs], ms)} ms, p99 {spread([s['p99'] for s in rs], ms)} ms"
        )
    ratios = [h["rate"] / q["rate"] for h, q in zip(results["herald"], results["asyncio.Queue"])]
    p99s = [h["p99"] / q["p99"] for h, q in zip(results["herald"], results["asyncio.Queue"])]
    print(
        "herald / asyncio.Queue per round: throughput "
        + ", ".join(f"{x:.2f}x" for x in ratios)
        + f" (median {statistics.median(ratios):.2f}x); p99 latency "
        + ", ".join(f"{x:.2f}x" for x in p99s)
    )


if __name__ == "__main__":
    main()
