"""Herald's asyncio fan-out against Python's own, in one run.

N watchers consumed from asyncio (`async for ev in watch`, each watch
woken through the loop's one Herald eventfd), fed by a writer task in the
same loop that applies changes whose payload carries their send time
(`time.perf_counter_ns()`) and their number, against the same N consumers
reading an `asyncio.Queue` each, fed by one producer task. Rounds
alternate the two systems (which goes first alternates too); each round
writes for `--seconds` (flat out, or at `--rate` changes/s), in steps of
`--step` changes and a `sleep(0)` (or a sleep to the next step's time),
then a last message that ends every consumer. Reported per round and as
median [min-max]: deliveries/s (deliveries / first send to last receipt)
and the p50/p99 latency from send to receipt over every delivery; and the
per-round ratios. Every delivery is checked: each watcher gets exactly
its changes, in order.

Cases (`--case`, comma-separated; all three by default):
- all: every watcher gets every change (the Queue producer `put_nowait`s
  each change to every queue);
- selective: watcher i watches node i only (Herald: field selector
  `spec.nodeName=node-i`, the engine indexing `spec.nodeName`); change k
  is for node k % N, so each change goes to one watcher. The native
  producer applies every watcher's filter to every change (a loop over
  the N (filter, queue) pairs, a put on a match): the native fan-out with
  filters;
- mixed: one watcher in four gets everything, the rest one node each.

    python bindings/python/bench.py --watchers 1000 --rounds 5 --seconds 1
    python bindings/python/bench.py --case all --rate 400   # paced
"""

import argparse
import asyncio
import statistics
import struct
import sys
import time

import herald

PACK = struct.Struct("<qq")  # send time (perf_counter_ns), change number
END = b"END"
FIELD = "spec.nodeName"


class Case:
    """Who watches what. Change k is for node k % watchers; watcher i
    watches every change (want None) or node i's only."""

    def __init__(self, name, watchers):
        self.name = name
        self.n = watchers
        if name == "all":
            self.wants = [None] * watchers
        elif name == "selective":
            self.wants = list(range(watchers))
        elif name == "mixed":
            self.wants = [None if i % 4 == 0 else i for i in range(watchers)]
        else:
            raise SystemExit(f"unknown case {name!r}")
        self.nodes = [f"node-{i}" for i in range(watchers)]
        self.fields = [{FIELD: n} for n in self.nodes]
        self.names = [f"obj-{i}" for i in range(watchers)]

    def expected(self, want, changes):
        """The change numbers watcher `want` receives, first and step."""
        return (0, 1) if want is None else (want, self.n)

    def count(self, want, changes):
        first, step = self.expected(want, changes)
        return len(range(first, changes, step))


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[i]


class Round:
    def __init__(self, case):
        self.case = case
        self.latencies = []
        self.deliveries = 0
        self.first_send = None
        self.last_receipt = 0
        self.changes = 0
        self.counts = {}  # watcher -> deliveries (each checked in order)


def check_end(r, i, want, n, last):
    r.deliveries += n
    r.counts[i] = n
    r.last_receipt = max(r.last_receipt, last)


async def consume_herald(watch, r, i, want):
    lat = r.latencies
    now = time.perf_counter_ns
    unpack = PACK.unpack_from
    expect, step = r.case.expected(want, 0)
    n = 0
    last = 0
    async for ev in watch:
        p = ev.payload
        if p == END:
            break
        last = now()
        sent, seq = unpack(p)
        if seq != expect:
            raise AssertionError(f"herald watcher {i}: change {seq}, expected {expect}")
        expect += step
        lat.append(last - sent)
        n += 1
    check_end(r, i, want, n, last)


async def consume_queue(q, r, i, want):
    lat = r.latencies
    now = time.perf_counter_ns
    unpack = PACK.unpack_from
    expect, step = r.case.expected(want, 0)
    n = 0
    last = 0
    while True:
        p = await q.get()
        if p == END:
            break
        last = now()
        sent, seq = unpack(p)
        if seq != expect:
            raise AssertionError(f"queue watcher {i}: change {seq}, expected {expect}")
        expect += step
        lat.append(last - sent)
        n += 1
    check_end(r, i, want, n, last)


async def pace(args, r, now):
    """Yields to the loop; at a fixed rate, until the next step is due."""
    if args.rate <= 0:
        await asyncio.sleep(0)
        return
    due = r.first_send + int(r.changes / args.rate * 1e9)
    await asyncio.sleep(max(0, due - now()) / 1e9)


async def round_herald(args, case):
    r = Round(case)
    n = case.n
    if case.name == "all":
        engine = herald.Engine()
    else:
        engine = herald.Engine(indexed_fields=[FIELD])
    writer = engine.writer()
    if case.name == "all":
        writer.replace([], 1)
    else:
        writer.replace(
            [herald.Object("bench", case.names[i], None, case.fields[i], b"") for i in range(n)], 1
        )
    watches = [
        engine.watch(resource_version=1)
        if want is None
        else engine.watch(resource_version=1, field_selector=f"{FIELD}={case.nodes[want]}")
        for want in case.wants
    ]
    tasks = [asyncio.create_task(consume_herald(w, r, i, case.wants[i])) for i, w in enumerate(watches)]
    await asyncio.sleep(0.2)  # every consumer is waiting
    rv = 1
    now = time.perf_counter_ns
    pack = PACK.pack
    apply = writer.apply
    r.first_send = now()
    stop_at = r.first_send + int(args.seconds * 1e9)
    seq = 0
    if case.name == "all":
        while now() < stop_at:
            for _ in range(args.step):
                rv += 1
                apply("MODIFIED", rv, "bench", "obj", payload=pack(now(), seq))
                seq += 1
            r.changes = seq
            await pace(args, r, now)
        writer.apply("MODIFIED", rv + 1, "bench", "obj", payload=END)
    else:
        names, fields = case.names, case.fields
        while now() < stop_at:
            for _ in range(args.step):
                rv += 1
                node = seq % n
                apply("MODIFIED", rv, "bench", names[node], None, fields[node], pack(now(), seq))
                seq += 1
            r.changes = seq
            await pace(args, r, now)
        for node in range(n):  # the end, to every watcher
            rv += 1
            apply("MODIFIED", rv, "bench", names[node], None, fields[node], END)
    await asyncio.wait_for(asyncio.gather(*tasks), 300)
    engine.stop()
    return r


async def round_native(args, case):
    r = Round(case)
    n = case.n
    queues = [asyncio.Queue() for _ in range(n)]
    tasks = [asyncio.create_task(consume_queue(q, r, i, case.wants[i])) for i, q in enumerate(queues)]
    await asyncio.sleep(0.2)
    now = time.perf_counter_ns
    pack = PACK.pack
    r.first_send = now()
    stop_at = r.first_send + int(args.seconds * 1e9)
    seq = 0
    if case.name == "all":
        while now() < stop_at:
            for _ in range(args.step):
                msg = pack(now(), seq)
                for q in queues:
                    q.put_nowait(msg)
                seq += 1
            r.changes = seq
            await pace(args, r, now)
    else:
        # The native fan-out with filters: each watcher's field selector
        # (None: everything) applied to each change's fields.
        subs = [(None if want is None else case.nodes[want], q) for want, q in zip(case.wants, queues)]
        fields = case.fields
        while now() < stop_at:
            for _ in range(args.step):
                f = fields[seq % n]
                msg = pack(now(), seq)
                for want, q in subs:
                    if want is None or f.get(FIELD) == want:
                        q.put_nowait(msg)
                seq += 1
            r.changes = seq
            await pace(args, r, now)
    for q in queues:
        q.put_nowait(END)
    await asyncio.wait_for(asyncio.gather(*tasks), 300)
    return r


def summarize(r):
    case = r.case
    for i, want in enumerate(case.wants):
        expected = case.count(want, r.changes)
        assert r.counts.get(i) == expected, (case.name, i, r.counts.get(i), expected)
    elapsed = (r.last_receipt - r.first_send) / 1e9
    lat = sorted(r.latencies)
    return {
        "rate": r.deliveries / elapsed,
        "p50": percentile(lat, 0.50) / 1e6,
        "p99": percentile(lat, 0.99) / 1e6,
        "changes": r.changes,
        "deliveries": r.deliveries,
    }


def spread(values, fmt):
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}-{fmt(max(values))}]"


def ratios(name, a, b, key):
    v = [x[key] / y[key] for x, y in zip(a, b)]
    return f"{name} " + ", ".join(f"{x:.2f}x" for x in v) + f" (median {statistics.median(v):.2f}x)"


def run_case(args, case):
    print(f"case {case.name}:", flush=True)
    results = {"herald": [], "asyncio.Queue": []}
    systems = {"herald": round_herald, "asyncio.Queue": round_native}
    for i in range(args.rounds):
        order = ["herald", "asyncio.Queue"] if i % 2 == 0 else ["asyncio.Queue", "herald"]
        for name in order:
            s = summarize(asyncio.run(systems[name](args, case)))
            results[name].append(s)
            print(
                f"round {i + 1} {name:>14}: {s['rate'] / 1e6:6.3f} M deliveries/s "
                f"({s['changes']} changes, {s['deliveries']} deliveries), "
                f"p50 {s['p50']:7.2f} ms, p99 {s['p99']:7.2f} ms",
                flush=True,
            )
    m = lambda v: f"{v / 1e6:.3f}"
    ms = lambda v: f"{v:.2f}"
    for name, rs in results.items():
        print(
            f"{case.name} {name:>14}: {spread([s['rate'] for s in rs], m)} M deliveries/s, "
            f"p50 {spread([s['p50'] for s in rs], ms)} ms, p99 {spread([s['p99'] for s in rs], ms)} ms"
        )
    h, q = results["herald"], results["asyncio.Queue"]
    print(
        f"{case.name} herald / asyncio.Queue per round: "
        + ratios("throughput", h, q, "rate")
        + "; "
        + ratios("p50", h, q, "p50")
        + "; "
        + ratios("p99", h, q, "p99")
    )
    print(flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--step", type=int, default=4, help="changes per loop step")
    ap.add_argument(
        "--rate", type=float, default=0, help="changes/s to offer (0: flat out, as fast as the writer goes)"
    )
    ap.add_argument(
        "--case",
        default="all,selective,mixed",
        help="comma-separated: all (every watcher every change), selective (watcher i: node i's "
        "changes only, field selector spec.nodeName=node-i), mixed (one in four everything, "
        "the rest one node)",
    )
    args = ap.parse_args()
    print(
        f"herald {herald.__version__}, Python {sys.version.split()[0]}: {args.watchers} watchers, "
        f"{args.rounds} rounds of {args.seconds}s, {args.step} changes per step, "
        f"{'flat out' if args.rate <= 0 else f'{args.rate:g} changes/s'}",
        flush=True,
    )
    for name in args.case.split(","):
        run_case(args, Case(name.strip(), args.watchers))


if __name__ == "__main__":
    main()
