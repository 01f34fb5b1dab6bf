"""The Python binding's tests: writes, reads, watches (blocking, batch and
asyncio), selectors, order, ends with their reasons, bad input, threads,
many asyncio tasks, and a consumer that never reads."""

import asyncio
import threading
import time

import pytest

import herald


def obj(name, ns="default", labels=None, fields=None, payload=b""):
    return herald.Object(ns, name, labels or {}, fields or {}, payload)


@pytest.fixture
def ew():
    engine = herald.Engine(indexed_fields=["spec.nodeName"])
    writer = engine.writer()
    writer.replace([], 1)
    yield engine, writer
    engine.stop()


def drain(watch, n, timeout=5.0):
    """n events from a blocking watch (fails rather than hangs)."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"got {len(out)} of {n}: {out[-3:]}"
        out.extend(watch.poll(n - len(out), timeout=0.2))
    return out


# ---------------------------------------------------------------- basics


def test_write_list_get_watch(ew):
    engine, writer = ew
    assert engine.lifecycle == "ready"
    writer.apply("ADDED", 2, "default", "a", {"app": "web"}, {"spec.nodeName": "n1"}, b"A")
    writer.apply("ADDED", 3, "kube-system", "b", payload=bytearray(b"B"))
    assert engine.resource_version == 3
    page = engine.list()
    assert [i.key for i in page.items] == ["default/a", "kube-system/b"]
    assert page.resource_version == 3 and page.continue_token is None
    item = engine.get("default/a")
    assert item.payload == b"A" and item.resource_version == 2
    assert item.labels == {"app": "web"} and item.field("spec.nodeName") == "n1"
    assert item.namespace == "default" and item.name == "a"
    assert engine.get("default/missing") is None

    watch = engine.watch()  # the current state first, then changes
    first = drain(watch, 2)
    assert [(e.kind, e.key, e.resource_version) for e in first] == [
        ("ADDED", "default/a", 2),
        ("ADDED", "kube-system/b", 3),
    ]
    writer.apply("MODIFIED", 4, "default", "a", {"app": "web"}, payload=b"A2")
    writer.apply("DELETED", 5, "default", "a", {"app": "web"}, payload=b"A2")
    ev = next(watch)
    assert (ev.kind, ev.resource_version, ev.payload, ev.labels) == ("MODIFIED", 4, b"A2", {"app": "web"})
    ev = next(watch)
    assert (ev.kind, ev.key, ev.namespace, ev.name) == ("DELETED", "default/a", "default", "a")
    assert engine.stats()["changes_received"] >= 4


def test_list_pages_with_continue(ew):
    engine, writer = ew
    writer.replace([obj(f"o{i:02}") for i in range(25)], 10)
    keys, token, pages = [], None, 0
    while True:
        page = engine.list(limit=10, continue_token=token)
        keys += [i.key for i in page.items]
        pages += 1
        token = page.continue_token
        if token is None:
            break
    assert pages == 3 and keys == [f"default/o{i:02}" for i in range(25)]


def test_list_and_get_at_versions(ew):
    engine, writer = ew
    writer.apply("ADDED", 2, "ns", "a", payload=b"1")
    writer.apply("MODIFIED", 3, "ns", "a", payload=b"2")
    assert engine.get("ns/a", resource_version=2, resource_version_match="Exact").payload == b"1"
    assert engine.list(resource_version=0).resource_version == 3
    assert engine.list(resource_version=2, resource_version_match="NotOlderThan").resource_version >= 2


def test_watch_from_a_version_replays_history(ew):
    engine, writer = ew
    for rv in range(2, 12):
        writer.apply("ADDED", rv, "ns", f"o{rv}")
    evs = drain(engine.watch(resource_version=6), 5)
    assert [e.resource_version for e in evs] == [7, 8, 9, 10, 11]


def test_watch_list_ends_initial_events_with_a_bookmark(ew):
    engine, writer = ew
    writer.apply("ADDED", 2, "ns", "a")
    watch = engine.watch(send_initial_events=True, allow_bookmarks=True)
    evs = drain(watch, 2)
    assert evs[0].kind == "ADDED" and evs[0].key == "ns/a"
    assert evs[1].kind == "BOOKMARK" and evs[1].initial_events_end and evs[1].key is None
    assert evs[1].payload == b""


# ------------------------------------------------------------- selectors


def test_selectors_and_scopes(ew):
    engine, writer = ew
    web = engine.watch(resource_version=1, label_selector="app in (web),tier!=canary")
    node = engine.watch(resource_version=1, field_selector="spec.nodeName=n2")
    ns = engine.watch(resource_version=1, namespace="team")
    one = engine.watch(resource_version=1, key="team/x")
    writer.apply("ADDED", 2, "default", "a", {"app": "web"}, {"spec.nodeName": "n1"})
    writer.apply("ADDED", 3, "default", "b", {"app": "web", "tier": "canary"}, {"spec.nodeName": "n2"})
    writer.apply("ADDED", 4, "team", "x", {"app": "db"}, {"spec.nodeName": "n2"})
    writer.apply("ADDED", 5, "team", "y", {"app": "web"})
    # a moves to n2: for the node watch it enters the view.
    writer.apply("MODIFIED", 6, "default", "a", {"app": "web"}, {"spec.nodeName": "n2"})
    # b becomes a non-canary: it enters the web view.
    writer.apply("MODIFIED", 7, "default", "b", {"app": "web"}, {"spec.nodeName": "n2"})
    writer.apply("ADDED", 8, "zzz", "end")  # a marker none of them sees but all are past
    got = lambda w, n: [(e.kind, e.key) for e in drain(w, n)]
    assert got(web, 4) == [("ADDED", "default/a"), ("ADDED", "team/y"), ("MODIFIED", "default/a"), ("ADDED", "default/b")]
    assert got(node, 4) == [("ADDED", "default/b"), ("ADDED", "team/x"), ("ADDED", "default/a"), ("MODIFIED", "default/b")]
    assert got(ns, 2) == [("ADDED", "team/x"), ("ADDED", "team/y")]
    assert got(one, 1) == [("ADDED", "team/x")]
    for w in (web, node, ns, one):
        assert w.poll(10, timeout=0.1) == []


def test_a_label_change_out_of_the_view_is_a_deletion(ew):
    engine, writer = ew
    w = engine.watch(resource_version=1, label_selector="app=web")
    writer.apply("ADDED", 2, "ns", "a", {"app": "web"})
    writer.apply("MODIFIED", 3, "ns", "a", {"app": "db"})
    assert [(e.kind, e.resource_version) for e in drain(w, 2)] == [("ADDED", 2), ("DELETED", 3)]


# ----------------------------------------------------------------- order


def test_events_arrive_in_order_without_gaps(ew):
    engine, writer = ew
    watch = engine.watch(resource_version=1)
    n = 3000
    for rv in range(2, n + 2):
        writer.apply("ADDED" if rv % 3 else "MODIFIED", rv, "ns", f"o{rv % 50}")
    evs = drain(watch, n)
    assert [e.resource_version for e in evs] == list(range(2, n + 2))


# ------------------------------------------------------------------ ends


def test_stop_ends_a_blocked_iteration_from_another_thread(ew):
    engine, writer = ew
    watch = engine.watch(resource_version=1)
    got = []
    t = threading.Thread(target=lambda: got.extend(watch))
    t.start()
    writer.apply("ADDED", 2, "ns", "a")
    time.sleep(0.2)
    watch.stop()
    t.join(5)
    assert not t.is_alive()
    assert [e.resource_version for e in got] == [2]
    assert watch.end_reason == "stopped"
    assert list(watch) == [] and watch.poll() == []


def test_deadline(ew):
    engine, _ = ew
    watch = engine.watch(resource_version=1, timeout=0.2)
    t0 = time.monotonic()
    assert list(watch) == []
    assert watch.end_reason == "deadline"
    assert 0.15 < time.monotonic() - t0 < 5


def test_engine_stopped_and_relisted():
    engine = herald.Engine()
    writer = engine.writer()
    writer.replace([obj("a")], 5)
    w1 = engine.watch(resource_version=5)
    w1.poll()  # begun
    writer.replace([obj("b")], 9)  # a re-list ends running watches
    list(w1)
    assert w1.end_reason == "relisted"
    w2 = engine.watch(resource_version=9)
    engine.stop()
    assert list(w2) == [] and w2.end_reason == "engine_stopped"
    assert engine.lifecycle == "stopped"


def test_gone_with_a_small_history():
    engine = herald.Engine(history=(4, 4))
    writer = engine.writer()
    writer.replace([], 1)
    for rv in range(2, 30):
        writer.apply("ADDED", rv, "ns", f"o{rv}")
    with pytest.raises(herald.Gone, match="too old resource version"):
        engine.watch(resource_version=2)
    with pytest.raises(herald.Gone):
        engine.list(resource_version=2, resource_version_match="Exact")
    # A watch that falls behind the history while running ends "gone".
    watch = engine.watch(resource_version=29)
    assert watch.poll() == []  # begun, at 29
    # Far past the ring: it keeps whole chunks (a cursor may still hold
    # the one it read last), so a short run can leave every record the
    # watch needs readable; this many replaces every chunk several times.
    for rv in range(30, 1000):
        writer.apply("ADDED", rv, "ns", f"p{rv}")
    got = []
    deadline = time.monotonic() + 5
    while watch.end_reason is None and time.monotonic() < deadline:
        got += watch.poll(64, timeout=0.1)
    assert watch.end_reason == "gone", got
    assert "too old" in watch.end_message
    # What it received is a gap-free prefix.
    assert [e.resource_version for e in got] == list(range(30, 30 + len(got)))


def test_too_slow_under_the_time_budget():
    engine = herald.Engine(slow_watchers="time_budget")
    writer = engine.writer()
    writer.replace([], 1)
    slow = engine.watch(resource_version=1, label_selector="app=web")
    assert slow.poll() == []  # begun; never read again until the end
    for rv in range(2, 5000):
        writer.apply("ADDED", rv, "ns", f"o{rv % 100}", {"app": "web"})
    got = []
    deadline = time.monotonic() + 10
    while slow.end_reason is None and time.monotonic() < deadline:
        got += slow.poll(256, timeout=0.1)
    assert slow.end_reason == "too_slow"
    assert [e.resource_version for e in got] == list(range(2, 2 + len(got)))
    with pytest.raises(herald.InvalidArgument):
        herald.Engine(slow_watchers="drop")
    engine.stop()


def test_too_large_resource_version():
    engine = herald.Engine(too_large_timeout=0.2)
    writer = engine.writer()
    writer.replace([], 1)
    watch = engine.watch(resource_version=100)
    assert list(watch) == [] and watch.end_reason == "too_large_resource_version"
    with pytest.raises(herald.TooLargeResourceVersion):
        engine.list(resource_version=100)
    engine.stop()


def test_context_managers():
    with herald.Engine() as engine:
        with engine.writer() as writer:
            writer.replace([], 1)
            with engine.watch() as watch:
                pass
            assert watch.closed
            with pytest.raises(herald.ClosedError):
                next(watch)
            with pytest.raises(herald.ClosedError):
                watch.poll()
        with pytest.raises(herald.ClosedError):
            writer.apply("ADDED", 2, "ns", "a")
    assert engine.lifecycle == "stopped"


# ------------------------------------------------------------- bad input


def test_malformed_selectors(ew):
    engine, _ = ew
    for kw in ({"label_selector": "app in (web"}, {"label_selector": "=x"}, {"field_selector": "a==b==c"}):
        with pytest.raises(herald.InvalidSelector):
            engine.watch(**kw)
        with pytest.raises(herald.InvalidArgument):  # the base class
            engine.list(**kw)
    with pytest.raises(herald.HeraldError):
        engine.watch(label_selector="!!!")


def test_out_of_order_and_not_ready_and_names():
    engine = herald.Engine()
    writer = engine.writer()
    with pytest.raises(herald.NotReady):
        writer.apply("ADDED", 1, "ns", "a")
    with pytest.raises(herald.NotReady):
        engine.list()
    writer.replace([], 5)
    with pytest.raises(herald.OutOfOrder, match="out-of-order"):
        writer.apply("ADDED", 5, "ns", "a")
    with pytest.raises(herald.OutOfOrder):
        writer.apply("ADDED", 3, "ns", "a")
    writer.apply("ADDED", 6, "ns", "a")  # nothing changed by the refusals
    with pytest.raises(herald.InvalidArgument):
        writer.apply("ADDED", 7, "ns", "a/b")
    with pytest.raises(herald.InvalidArgument):
        writer.apply("ADDED", 7, "ns", "")
    with pytest.raises(herald.InvalidArgument):
        writer.apply("UPSERTED", 7, "ns", "b")
    with pytest.raises(herald.InvalidArgument, match="taken"):
        engine.writer()
    with pytest.raises(herald.InvalidArgument):
        engine.watch(resource_version_match="Sometimes", resource_version=1)
    with pytest.raises(herald.InvalidArgument):
        engine.list(resource_version_match="Exact")  # a match needs a version
    with pytest.raises(herald.InvalidArgument):
        engine.list(continue_token="not a token")
    with pytest.raises(herald.InvalidArgument):
        engine.watch(namespace="ns", key="ns/a")
    with pytest.raises(herald.InvalidArgument):
        engine.watch(timeout=-1)
    with pytest.raises(herald.InvalidArgument):
        engine.watch(timeout=float("nan"))
    forever = engine.watch(timeout=float("inf"))  # saturates: no deadline
    forever.poll(timeout=0.05)
    assert forever.end_reason is None
    with pytest.raises(herald.InvalidArgument):
        herald.Engine(history=(10, 2))
    assert engine.resource_version == 6
    engine.stop()


def test_wrong_types(ew):
    engine, writer = ew
    with pytest.raises(TypeError):
        writer.apply("ADDED", "2", "ns", "a")
    with pytest.raises(TypeError):
        writer.apply("ADDED", 2, "ns", "a", payload="text")
    with pytest.raises(TypeError):
        writer.apply("ADDED", 2, "ns", "a", labels={"a": 1})
    with pytest.raises(TypeError):
        writer.replace([("ns", "a")], 3)
    with pytest.raises(TypeError):
        engine.watch(label_selector=5)
    with pytest.raises(TypeError):
        herald.Engine(indexed_fields="spec.nodeName")
    with pytest.raises(OverflowError):
        writer.apply("ADDED", -1, "ns", "a")
    with pytest.raises(TypeError):
        herald.Watch()  # not constructible from Python
    assert engine.resource_version == 1


def test_calls_after_stop(ew):
    engine, writer = ew
    watch = engine.watch()
    engine.stop()
    with pytest.raises(herald.EngineStopped):
        writer.apply("ADDED", 2, "ns", "a")
    with pytest.raises(herald.EngineStopped):
        engine.watch()
    with pytest.raises(herald.EngineStopped):
        engine.list()
    assert list(watch) == [] and watch.end_reason == "engine_stopped"
    watch.stop()  # after the end: harmless
    watch.close()
    watch.close()
    with pytest.raises(herald.ClosedError):
        watch.poll()
    engine.stop()


# --------------------------------------------------------------- threads


def test_many_threads_at_once(ew):
    engine, writer = ew
    n, readers = 2000, 8
    watches = [engine.watch(resource_version=1) for _ in range(readers)]
    results = [None] * readers
    errors = []

    def consume(i):
        try:
            results[i] = [e.resource_version for e in drain(watches[i], n, timeout=30)]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def read():
        try:
            for _ in range(200):
                engine.list(limit=5)
                engine.get("ns/o1")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def write(lo, hi):
        # The writer runs in its own thread while the others read.
        for rv in range(lo, hi):
            while True:
                try:
                    writer.apply("ADDED", rv, "ns", f"o{rv % 100}")
                    break
                except herald.OutOfOrder:
                    errors.append(AssertionError(f"out of order at {rv}"))
                    return

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(readers)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    write_thread = threading.Thread(target=write, args=(2, n + 2))
    write_thread.start()
    for t in threads + [write_thread]:
        t.join(60)
    assert not errors, errors
    for r in results:
        assert r == list(range(2, n + 2))


def test_the_gil_is_released_while_a_watch_waits(ew):
    engine, writer = ew
    watch = engine.watch(resource_version=1)
    t = threading.Thread(target=lambda: next(watch))
    t.start()
    time.sleep(0.05)
    # The main thread keeps running Python while the other is blocked.
    t0, count = time.monotonic(), 0
    while time.monotonic() - t0 < 0.3:
        count += 1
    assert count > 10_000
    writer.apply("ADDED", 2, "ns", "a")
    t.join(5)
    assert not t.is_alive()


def test_ctrl_c_interrupts_a_blocked_iteration(ew):
    import _thread
    import signal

    engine, writer = ew
    watch = engine.watch(resource_version=1)
    # Ctrl-C again every 0.2 s until the iteration raises: CPython drops a
    # KeyboardInterrupt that its handler raises while a finalizer runs
    # ("Exception ignored in ..."), and a deferred decref or a GC pass can
    # run one whenever the waiting thread takes the GIL back to look at
    # signals (one interrupt, lost that way, hung this test once). After
    # 5 s the thread writes a change instead, so that a binding that does
    # not look at signals fails here rather than hanging.
    stop = threading.Event()

    def on_sigint(signum, frame):
        if not stop.is_set():
            raise KeyboardInterrupt

    def interrupt():
        deadline = time.monotonic() + 5
        while not stop.wait(0.2):
            if time.monotonic() > deadline:
                writer.apply("ADDED", 2, "ns", "a")
                return
            _thread.interrupt_main()

    previous = signal.signal(signal.SIGINT, on_sigint)
    t = threading.Thread(target=interrupt)
    t0 = time.monotonic()
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(watch)
    finally:
        stop.set()
        t.join()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 5
    # The watch is intact.
    assert watch.end_reason is None and watch.poll() == []


# --------------------------------------------------------------- asyncio


def test_many_asyncio_tasks_on_many_watches(ew):
    engine, writer = ew
    n_watches, n_changes = 300, 200

    async def main():
        watches = [engine.watch(resource_version=1, label_selector="" if i % 2 else "app=web") for i in range(n_watches)]

        async def consume(w, want):
            got = []
            async for ev in w:
                got.append(ev.resource_version)
                if len(got) == want:
                    break
            return got

        tasks = [asyncio.create_task(consume(w, n_changes if i % 2 else n_changes // 2)) for i, w in enumerate(watches)]
        await asyncio.sleep(0.01)

        async def produce():
            for rv in range(2, n_changes + 2):
                writer.apply("ADDED", rv, "ns", f"o{rv}", {"app": "web" if rv % 2 else "db"})
                if rv % 10 == 0:
                    await asyncio.sleep(0)

        await produce()
        results = await asyncio.wait_for(asyncio.gather(*tasks), 30)
        for i, r in enumerate(results):
            if i % 2:
                assert r == list(range(2, n_changes + 2))
            else:
                assert r == [rv for rv in range(2, n_changes + 2) if rv % 2]

    asyncio.run(main())


@pytest.mark.parametrize("inline", [True, False])
def test_a_writer_on_the_loop_with_and_without_inline_dispatch(inline):
    # inline_dispatch (the default): apply wakes the loop's watches from
    # the loop's own thread; False: the engine's dispatcher thread does.
    # Each watch gets exactly its changes, in order, either way.
    engine = herald.Engine(indexed_fields=["spec.nodeName"], inline_dispatch=inline)
    writer = engine.writer()
    nodes, n_changes = 20, 400
    writer.replace([herald.Object("ns", f"o{i}", None, {"spec.nodeName": f"n{i}"}) for i in range(nodes)], 1)

    async def main():
        watches = [engine.watch(resource_version=1, field_selector=f"spec.nodeName=n{i}") for i in range(nodes)]
        watches.append(engine.watch(resource_version=1))

        async def consume(w, want):
            got = []
            async for ev in w:
                got.append(ev.resource_version)
                if len(got) == want:
                    break
            return got

        wants = [n_changes // nodes] * nodes + [n_changes]
        tasks = [asyncio.create_task(consume(w, n)) for w, n in zip(watches, wants)]
        await asyncio.sleep(0.01)
        for k in range(n_changes):
            i = k % nodes
            writer.apply("MODIFIED", k + 2, "ns", f"o{i}", None, {"spec.nodeName": f"n{i}"})
            if k % 7 == 0:
                await asyncio.sleep(0)
        results = await asyncio.wait_for(asyncio.gather(*tasks), 30)
        for i in range(nodes):
            assert results[i] == [k + 2 for k in range(n_changes) if k % nodes == i]
        assert results[nodes] == list(range(2, n_changes + 2))

    asyncio.run(main())
    engine.stop()


def test_async_iteration_ends_with_a_reason(ew):
    engine, writer = ew

    async def main():
        stopped = engine.watch(resource_version=1)
        deadline = engine.watch(resource_version=1, timeout=0.2)

        async def consume(w):
            return [e.resource_version async for e in w]

        t1 = asyncio.create_task(consume(stopped))
        t2 = asyncio.create_task(consume(deadline))
        await asyncio.sleep(0.05)
        writer.apply("ADDED", 2, "ns", "a")
        await asyncio.sleep(0.05)
        stopped.stop()
        assert await asyncio.wait_for(t1, 5) == [2]
        assert stopped.end_reason == "stopped"
        assert await asyncio.wait_for(t2, 5) == [2]
        assert deadline.end_reason == "deadline"

        closing = engine.watch(resource_version=2)
        t3 = asyncio.create_task(consume(closing))
        await asyncio.sleep(0.05)
        closing.close()
        assert await asyncio.wait_for(t3, 5) == []
        with pytest.raises(herald.ClosedError):
            await closing.__anext__()

        last = engine.watch(resource_version=2)
        t4 = asyncio.create_task(consume(last))
        await asyncio.sleep(0.05)
        engine.stop()
        assert await asyncio.wait_for(t4, 5) == []
        assert last.end_reason == "engine_stopped"

    asyncio.run(main())


def test_a_cancelled_await_loses_nothing(ew):
    engine, writer = ew

    async def main():
        watch = engine.watch(resource_version=1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(watch.__anext__(), 0.05)
        writer.apply("ADDED", 2, "ns", "a")
        writer.apply("ADDED", 3, "ns", "b")
        await asyncio.sleep(0.05)
        got = [(await watch.__anext__()).resource_version for _ in range(2)]
        assert got == [2, 3]
        # A second await while one is pending is refused.
        pending = asyncio.ensure_future(watch.__anext__())
        await asyncio.sleep(0)
        with pytest.raises(herald.InvalidArgument):
            await watch.__anext__()
        writer.apply("ADDED", 4, "ns", "c")
        assert (await asyncio.wait_for(pending, 5)).resource_version == 4
        # Awaited on a loop: a blocking receive is refused, a non-blocking
        # poll works.
        with pytest.raises(herald.InvalidArgument):
            watch.poll(timeout=1)
        assert watch.poll(timeout=0) == []

    asyncio.run(main())


def test_stops_from_another_thread_end_awaiting_tasks(ew):
    engine, writer = ew
    n_watches = 100

    async def main():
        watches = [engine.watch(resource_version=1) for _ in range(n_watches)]

        async def consume(w):
            return [e.resource_version async for e in w]

        tasks = [asyncio.create_task(consume(w)) for w in watches]
        await asyncio.sleep(0.05)
        stop_all = threading.Event()

        def write_and_stop():
            for rv in range(2, 1002):
                writer.apply("ADDED", rv, "ns", f"o{rv % 10}")
                if rv % 10 == 0:
                    watches[(rv // 10) % n_watches].stop()
            for w in watches:
                w.stop()
            stop_all.set()

        t = threading.Thread(target=write_and_stop)
        t.start()
        results = await asyncio.wait_for(asyncio.gather(*tasks), 30)
        t.join()
        assert stop_all.is_set()
        for w, got in zip(watches, results):
            assert w.end_reason == "stopped"
            # What each received is a gap-free prefix of the changes.
            assert got == list(range(2, 2 + len(got)))

    asyncio.run(main())


def test_watches_on_two_loops_in_two_threads(ew):
    engine, writer = ew
    n = 300
    results = {}

    def run(name):
        async def main():
            w = engine.watch(resource_version=1)
            out = []
            async for ev in w:
                out.append(ev.resource_version)
                if len(out) == n:
                    break
            return out

        results[name] = asyncio.run(main())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    for rv in range(2, n + 2):
        writer.apply("ADDED", rv, "ns", f"o{rv}")
    for t in threads:
        t.join(30)
    assert results == {0: list(range(2, n + 2)), 1: list(range(2, n + 2))}


# --------------------------------------------------- a consumer that never reads


def test_a_consumer_that_never_reads_holds_no_one_up(ew):
    engine, writer = ew
    idle = engine.watch(resource_version=1)  # never read
    idle_selective = engine.watch(resource_version=1, label_selector="app=web")  # never read
    readers = [engine.watch(resource_version=1) for _ in range(4)]
    n = 20_000
    t0 = time.monotonic()
    for rv in range(2, n + 2):
        writer.apply("ADDED", rv, "ns", f"o{rv % 500}", {"app": "web"})
    write_time = time.monotonic() - t0
    for r in readers:
        evs = drain(r, n, timeout=60)
        assert [e.resource_version for e in evs] == list(range(2, n + 2))
    # The writer was never held up by the idle watches: 20,000 writes in
    # well under a second each way (generous, for a loaded CI machine).
    assert write_time < 10, write_time
    assert idle.end_reason is None and idle_selective.end_reason is None


# ------------------------------------------------------------ the README


def test_the_readme_example_runs():
    import pathlib
    import re
    import subprocess
    import sys

    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["ADDED 11 default/web-1 b'{\"moved\": true}'", "DELETED 12"]


def test_the_stubs_name_everything_the_module_has():
    import ast
    import pathlib

    stub = ast.parse((pathlib.Path(__file__).parent.parent / "herald.pyi").read_text())
    names = {n.name for n in stub.body if isinstance(n, ast.ClassDef)}
    public = {n for n in dir(herald) if not n.startswith("_") and isinstance(getattr(herald, n), type)}
    assert public <= names, public - names
