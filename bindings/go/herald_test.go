package herald

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newEngine(t testing.TB, opts ...Option) (*Engine, *Writer) {
	t.Helper()
	e, w, err := NewEngine(opts...)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() {
		_ = w.Close()
		_ = e.Stop()
		_ = e.Close()
	})
	if err := w.Replace(nil, 1); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	return e, w
}

func pod(ns, name, app, node, payload string) Object {
	return Object{
		Namespace: ns,
		Name:      name,
		Labels:    map[string]string{"app": app},
		Fields:    map[string]string{"spec.nodeName": node},
		Payload:   []byte(payload),
	}
}

// collect reads the channel until it closes or until n events came.
func collect(t *testing.T, ch <-chan Event, n int, timeout time.Duration) []Event {
	t.Helper()
	var got []Event
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatalf("timed out after %d of %d events", len(got), n)
		}
	}
	return got
}

// waitClosed waits for the channel to close, failing on an event.
func waitClosed(t *testing.T, ch <-chan Event, timeout time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("an event where the end was expected: %+v", ev)
		}
	case <-time.After(timeout):
		t.Fatalf("the channel did not close in %v", timeout)
	}
}

func TestWriteListGet(t *testing.T) {
	e, w := newEngine(t)
	for i := 0; i < 5; i++ {
		app := "web"
		if i%2 == 1 {
			app = "db"
		}
		if err := w.Apply(Added, uint64(2+i), pod("ns", fmt.Sprintf("p%d", i), app, "n1", fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Apply(Modified, 7, pod("ns", "p0", "web", "n1", `{"i":"0b"}`)); err != nil {
		t.Fatal(err)
	}
	if rv, err := e.ResourceVersion(); err != nil || rv != 7 {
		t.Fatalf("ResourceVersion = %d, %v", rv, err)
	}
	page, err := e.List(ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 5 || page.ResourceVersion != 7 || page.Continue != "" {
		t.Fatalf("list: %+v", page)
	}
	if page.Items[0].Key != "ns/p0" || string(page.Items[0].Payload) != `{"i":"0b"}` || page.Items[0].ResourceVersion != 7 {
		t.Fatalf("item 0: %+v", page.Items[0])
	}
	web, err := e.List(ListRequest{LabelSelector: "app=web"})
	if err != nil || len(web.Items) != 3 {
		t.Fatalf("app=web: %+v %v", web, err)
	}
	// Pages of 2.
	var keys []string
	req := ListRequest{Limit: 2}
	for pages := 0; ; pages++ {
		p, err := e.List(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			keys = append(keys, it.Key)
		}
		if p.Continue == "" {
			if pages != 2 {
				t.Fatalf("%d pages", pages+1)
			}
			break
		}
		req.Continue = p.Continue
	}
	if fmt.Sprint(keys) != "[ns/p0 ns/p1 ns/p2 ns/p3 ns/p4]" {
		t.Fatalf("paged keys: %v", keys)
	}
	it, rv, err := e.Get("ns/p1", Version{}, MatchDefault)
	if err != nil || it == nil || it.Key != "ns/p1" || rv != 7 {
		t.Fatalf("get: %+v %d %v", it, rv, err)
	}
	it, _, err = e.Get("ns/absent", Version{}, MatchDefault)
	if err != nil || it != nil {
		t.Fatalf("get absent: %+v %v", it, err)
	}
	// An exact read from history: p0 before its change.
	it, rv, err = e.Get("ns/p0", At(3), MatchExact)
	if err != nil || it == nil || string(it.Payload) != `{"i":0}` || rv != 3 {
		t.Fatalf("get exact: %+v %d %v", it, rv, err)
	}
	st, err := e.Stats()
	if err != nil || st.ChangesReceived == 0 {
		t.Fatalf("stats: %+v %v", st, err)
	}
}

func TestWatchSelectorsAndOrder(t *testing.T) {
	e, w := newEngine(t)
	ctx := context.Background()
	open := func(req WatchRequest) <-chan Event {
		req.ResourceVersion = At(1)
		wa, err := e.Watch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wa.Close() })
		return wa.Events(ctx)
	}
	all := open(WatchRequest{})
	web := open(WatchRequest{LabelSelector: "app=web"})
	notWeb := open(WatchRequest{LabelSelector: "app!=web"})
	node2 := open(WatchRequest{FieldSelector: "spec.nodeName=n2"})
	ns2 := open(WatchRequest{Scope: ScopePrefix, ScopeValue: "ns2"})
	one := open(WatchRequest{Scope: ScopeKey, ScopeValue: "ns/a"})

	steps := []struct {
		kind ChangeKind
		o    Object
	}{
		{Added, pod("ns", "a", "web", "n1", "a1")},
		{Added, pod("ns", "b", "db", "n2", "b1")},
		{Added, pod("ns2", "c", "web", "n2", "c1")},
		{Modified, pod("ns", "a", "db", "n1", "a2")}, // a leaves app=web
		{Modified, pod("ns", "b", "db", "n1", "b2")}, // b leaves n2
		{Deleted, pod("ns2", "c", "web", "n2", "c1")},
	}
	for i, s := range steps {
		if err := w.Apply(s.kind, uint64(2+i), s.o); err != nil {
			t.Fatal(err)
		}
	}
	type ev struct {
		T   EventType
		Key string
		RV  uint64
		P   string
	}
	simple := func(evs []Event) []ev {
		var out []ev
		for _, e := range evs {
			out = append(out, ev{e.Type, e.Key, e.ResourceVersion, string(e.Payload)})
		}
		return out
	}
	check := func(name string, ch <-chan Event, want []ev) {
		t.Helper()
		got := simple(collect(t, ch, len(want), 10*time.Second))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, want)
		}
		select {
		case extra := <-ch:
			t.Errorf("%s: an extra event %+v", name, extra)
		case <-time.After(50 * time.Millisecond):
		}
	}
	check("all", all, []ev{
		{EventAdded, "ns/a", 2, "a1"}, {EventAdded, "ns/b", 3, "b1"}, {EventAdded, "ns2/c", 4, "c1"},
		{EventModified, "ns/a", 5, "a2"}, {EventModified, "ns/b", 6, "b2"}, {EventDeleted, "ns2/c", 7, "c1"},
	})
	check("app=web", web, []ev{
		{EventAdded, "ns/a", 2, "a1"}, {EventAdded, "ns2/c", 4, "c1"},
		{EventDeleted, "ns/a", 5, "a1"}, {EventDeleted, "ns2/c", 7, "c1"}, // a leaving: its last state that matched (as the apiserver)
	})
	check("app!=web", notWeb, []ev{
		{EventAdded, "ns/b", 3, "b1"}, {EventAdded, "ns/a", 5, "a2"}, {EventModified, "ns/b", 6, "b2"},
	})
	check("node n2", node2, []ev{
		{EventAdded, "ns/b", 3, "b1"}, {EventAdded, "ns2/c", 4, "c1"},
		{EventDeleted, "ns/b", 6, "b1"}, {EventDeleted, "ns2/c", 7, "c1"},
	})
	check("ns2", ns2, []ev{{EventAdded, "ns2/c", 4, "c1"}, {EventDeleted, "ns2/c", 7, "c1"}})
	check("key ns/a", one, []ev{{EventAdded, "ns/a", 2, "a1"}, {EventModified, "ns/a", 5, "a2"}})
}

func TestPollAndInitialEvents(t *testing.T) {
	e, w := newEngine(t)
	if err := w.Apply(Added, 2, pod("ns", "a", "web", "n1", "a")); err != nil {
		t.Fatal(err)
	}
	yes := true
	wa, err := e.Watch(context.Background(), WatchRequest{
		ResourceVersion: At(2), Match: MatchNotOlderThan, SendInitialEvents: &yes, AllowBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Close()
	var got []Event
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		evs, end, err := wa.Poll(16)
		if err != nil || end != nil {
			t.Fatalf("poll: %v %v", err, end)
		}
		got = append(got, evs...)
		if len(got) > 0 && got[len(got)-1].InitialEventsEnd {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if len(got) != 2 || got[0].Key != "ns/a" || got[1].Type != EventBookmark || !got[1].InitialEventsEnd {
		t.Fatalf("initial events: %+v", got)
	}
	// Nothing more: a non-blocking empty poll.
	if evs, end, err := wa.Poll(16); len(evs) != 0 || end != nil || err != nil {
		t.Fatalf("empty poll: %v %v %v", evs, end, err)
	}
	if err := w.Apply(Modified, 3, pod("ns", "a", "web", "n1", "a2")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		evs, _, err := wa.Poll(0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			if evs[0].Type != EventModified || evs[0].ResourceVersion != 3 {
				t.Fatalf("%+v", evs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no event")
		}
		time.Sleep(time.Millisecond)
	}
	// Poll and Events are exclusive.
	_ = wa.Events(context.Background())
	if _, _, err := wa.Poll(1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("poll after Events: %v", err)
	}
}

func TestEnds(t *testing.T) {
	e, w := newEngine(t)
	if err := w.Apply(Added, 2, pod("ns", "a", "web", "n1", "a")); err != nil {
		t.Fatal(err)
	}
	t.Run("stop", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(2)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ch := wa.Events(context.Background())
		time.AfterFunc(20*time.Millisecond, func() { _ = wa.Stop() })
		waitClosed(t, ch, 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || end.Cause != nil {
			t.Fatalf("end: %v", end)
		}
		if err := wa.Stop(); err != nil {
			t.Fatalf("stop after the end: %v", err)
		}
	})
	t.Run("watch ctx cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(2)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ch := wa.Events(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		waitClosed(t, ch, 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || !errors.Is(end.Cause, context.Canceled) {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("events ctx deadline", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(2)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		waitClosed(t, wa.Events(ctx), 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || !errors.Is(end.Cause, context.DeadlineExceeded) {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("poll mode ctx cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(2)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		cancel()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			_, end, err := wa.Poll(8)
			if err != nil {
				t.Fatal(err)
			}
			if end != nil {
				if end.Reason != EndStopped || !errors.Is(end.Cause, context.Canceled) {
					t.Fatalf("end: %v", end)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no end")
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(2), TimeoutMillis: 30})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		waitClosed(t, wa.Events(context.Background()), 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndDeadline {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("close", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(2)})
		if err != nil {
			t.Fatal(err)
		}
		ch := wa.Events(context.Background())
		time.AfterFunc(20*time.Millisecond, func() { wa.Close() })
		waitClosed(t, ch, 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || !errors.Is(end.Cause, ErrHandle) {
			t.Fatalf("end: %v", end)
		}
	})
}

func TestGone(t *testing.T) {
	e, w := newEngine(t, WithHistory(16, 64))
	for i := uint64(0); i < 1000; i++ {
		if err := w.Apply(Added, 2+i, pod("ns", fmt.Sprintf("p%d", i), "web", "n1", "x")); err != nil {
			t.Fatal(err)
		}
	}
	wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		// Refused at once (410), or ended at once: both are Gone.
		if !errors.Is(err, ErrGone) {
			t.Fatalf("watch from 1: %v", err)
		}
		t.Logf("watch from 1: %v", err)
	} else {
		defer wa.Close()
		waitClosed(t, wa.Events(context.Background()), 10*time.Second)
		end := wa.End()
		if end == nil || end.Reason != EndGone || end.Requested != 1 || end.Bound <= 1 {
			t.Fatalf("end: %v", end)
		}
		t.Logf("watch from 1: end %v", end)
	}
	// A watch that is not read while the writer moves on falls out of the
	// small history: it ends (Gone, or TooSlow by the slow-watcher
	// policy) when it is read again, after the events it still had.
	rv, _ := e.ResourceVersion()
	lag, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(rv)})
	if err != nil {
		t.Fatal(err)
	}
	defer lag.Close()
	ch := lag.Events(context.Background())
	for i := uint64(0); i < 2000; i++ {
		if err := w.Apply(Modified, rv+1+i, pod("ns", fmt.Sprintf("p%d", i%1000), "web", "n1", "y")); err != nil {
			t.Fatal(err)
		}
	}
	n, last := 0, rv
	for ev := range ch {
		if ev.ResourceVersion != last+1 {
			t.Fatalf("a gap: %d after %d", ev.ResourceVersion, last)
		}
		last = ev.ResourceVersion
		n++
	}
	end := lag.End()
	if end == nil || (end.Reason != EndGone && end.Reason != EndTooSlow) || n >= 2000 {
		t.Fatalf("the lagging watch: %d events, end %v", n, end)
	}
	t.Logf("the lagging watch: %d events in order, then %v", n, end)
	// An exact list from before the history: 410.
	if _, err := e.List(ListRequest{ResourceVersion: At(2), Match: MatchExact}); !errors.Is(err, ErrGone) {
		t.Fatalf("exact list at 2: %v", err)
	}
	// A history bound above the upper one is refused.
	if _, _, err := NewEngine(WithHistory(65, 64)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("history 65..64: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	e, w := newEngine(t)
	if err := w.Apply(Added, 2, pod("ns", "a", "web", "n1", "a")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, req := range []WatchRequest{
		{LabelSelector: "app in (web"},
		{LabelSelector: "=="},
		{FieldSelector: "spec.nodeName"},
		{FieldSelector: "a=b=c,,"},
		{LabelSelector: "app=web\xff"},
	} {
		if _, err := e.Watch(ctx, req); !errors.Is(err, ErrInvalid) {
			t.Errorf("watch %+v: %v", req, err)
		} else if err.(*Error).Message == "" {
			t.Errorf("no message: %v", err)
		}
	}
	if _, err := e.List(ListRequest{LabelSelector: "app in (web"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("list with a malformed selector: %v", err)
	}
	if _, err := e.List(ListRequest{Continue: "not-a-token"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("list with a bad continue: %v", err)
	}
	if _, err := e.List(ListRequest{Limit: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
	yes := true
	if _, err := e.Watch(ctx, WatchRequest{SendInitialEvents: &yes}); !errors.Is(err, ErrInvalid) {
		t.Errorf("sendInitialEvents without NotOlderThan: %v", err)
	}
	// Writes out of order, and at the same version.
	if err := w.Apply(Added, 2, pod("ns", "b", "web", "n1", "b")); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("write at 2 again: %v", err)
	}
	if err := w.Apply(Added, 1, pod("ns", "b", "web", "n1", "b")); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("write at 1: %v", err)
	}
	if err := w.Apply(Added, 3, pod("ns", "", "web", "n1", "b")); !errors.Is(err, ErrInvalid) {
		t.Errorf("an empty name: %v", err)
	}
	// A version from the future: the watch ends after the engine's wait.
	wf, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1000)})
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	waitClosed(t, wf.Events(ctx), 30*time.Second)
	if end := wf.End(); end == nil || end.Reason != EndTooLargeResourceVersion || end.Requested != 1000 || end.Bound != 2 {
		t.Errorf("future watch end: %v", end)
	}
	if _, err := e.List(ListRequest{ResourceVersion: At(1000), Match: MatchExact}); err == nil {
		t.Errorf("exact list in the future: no error")
	}
	// An engine with no list yet is not ready.
	e2, w2, err := NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.List(ListRequest{}); !errors.Is(err, ErrNotReady) {
		t.Errorf("list before the first replace: %v", err)
	}
	// Stop: watches end, writes and new watches fail.
	wa, err := e2.Watch(ctx, WatchRequest{})
	if err == nil {
		if err := e2.Stop(); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, wa.Events(ctx), 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndEngineStopped {
			t.Errorf("end after the engine's stop: %v", end)
		}
	} else if err := e2.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Replace(nil, 5); !errors.Is(err, ErrStopped) {
		t.Errorf("write after stop: %v", err)
	}
	if _, err := e2.Watch(ctx, WatchRequest{}); !errors.Is(err, ErrStopped) {
		t.Errorf("watch after stop: %v", err)
	}
	// Calls after Close: ErrHandle, never a crash.
	wp, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(2)})
	if err != nil {
		t.Fatal(err)
	}
	if err := wp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wp.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, _, err := wp.Poll(4); !errors.Is(err, ErrHandle) {
		t.Errorf("poll after close: %v", err)
	}
	if err := wp.Stop(); !errors.Is(err, ErrHandle) {
		t.Errorf("stop after close: %v", err)
	}
	if _, ok := <-wp.Events(ctx); ok {
		t.Errorf("events after close: an event")
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"apply":    w2.Apply(Added, 9, pod("ns", "x", "a", "b", "")),
		"replace":  w2.Replace(nil, 9),
		"progress": w2.Progress(9),
		"close":    w2.Close(),
	} {
		if !errors.Is(err, ErrHandle) {
			t.Errorf("writer %s after close: %v", name, err)
		}
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	_, rvErr := e2.ResourceVersion()
	_, listErr := e2.List(ListRequest{})
	_, _, getErr := e2.Get("ns/a", Version{}, MatchDefault)
	_, watchErr := e2.Watch(ctx, WatchRequest{})
	_, statsErr := e2.Stats()
	for name, err := range map[string]error{
		"stop": e2.Stop(), "close": e2.Close(), "resource version": rvErr,
		"list": listErr, "get": getErr, "watch": watchErr, "stats": statsErr,
	} {
		if !errors.Is(err, ErrHandle) {
			t.Errorf("engine %s after close: %v", name, err)
		}
	}
	// A zero Engine (never created) is a bad handle too.
	var zero Engine
	if _, err := zero.ResourceVersion(); !errors.Is(err, ErrHandle) {
		t.Errorf("zero engine: %v", err)
	}
}

// Many goroutines at once: watches opened, consumed and closed from many
// goroutines while the writer writes and others list and get.
func TestManyGoroutines(t *testing.T) { manyGoroutines(t) }

// The same with inline dispatch (the writer's goroutine fans out when the
// engine's dispatcher thread is idle): each watcher still gets exactly
// its node's changes, in order; and with batches, watchers of every
// change, by Events and by Poll, get every change in order.
func TestInlineDispatch(t *testing.T) {
	t.Run("many goroutines", func(t *testing.T) { manyGoroutines(t, WithInlineDispatch(true)) })
	t.Run("batches", func(t *testing.T) {
		e, w := newEngine(t, WithInlineDispatch(true))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const watchers, changes = 50, 3000
		var done sync.WaitGroup
		errs := make(chan error, watchers+1)
		for i := 0; i < watchers; i++ {
			wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
			if err != nil {
				t.Fatal(err)
			}
			defer wa.Close()
			done.Add(1)
			go func(i int) {
				defer done.Done()
				next := uint64(2)
				check := func(ev Event) bool {
					if ev.Type == EventBookmark {
						return true
					}
					if ev.ResourceVersion != next {
						errs <- fmt.Errorf("watcher %d: version %d, want %d", i, ev.ResourceVersion, next)
						return false
					}
					next++
					return next < 2+changes
				}
				if i%2 == 0 {
					for ev := range wa.Events(ctx) {
						if !check(ev) {
							return
						}
					}
					return
				}
				deadline := time.Now().Add(60 * time.Second)
				for {
					evs, end, err := wa.Poll(64)
					if err != nil || end != nil {
						errs <- fmt.Errorf("watcher %d: poll: %v, end %v", i, err, end)
						return
					}
					if len(evs) == 0 {
						if time.Now().After(deadline) {
							errs <- fmt.Errorf("watcher %d: stuck at %d", i, next)
							return
						}
						time.Sleep(time.Millisecond)
					}
					for _, ev := range evs {
						if !check(ev) {
							return
						}
					}
				}
			}(i)
		}
		rv := uint64(2)
		for rv < 2+changes {
			if (rv/100)%2 == 0 {
				kind := Modified
				if rv == 2 {
					kind = Added
				}
				if err := w.Apply(kind, rv, pod("ns", "a", "web", "n1", fmt.Sprint(rv))); err != nil {
					t.Fatal(err)
				}
				rv++
				continue
			}
			var batch []Change
			for j := 0; j < 10; j++ {
				batch = append(batch, Change{Kind: Modified, ResourceVersion: rv, Object: pod("ns", "a", "web", "n1", fmt.Sprint(rv))})
				rv++
			}
			if n, err := w.ApplyBatch(batch); err != nil || n != len(batch) {
				t.Fatalf("ApplyBatch: %d, %v", n, err)
			}
		}
		finished := make(chan struct{})
		go func() { done.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(60 * time.Second):
			t.Fatal("watchers did not finish")
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

func manyGoroutines(t *testing.T, opts ...Option) {
	e, w := newEngine(t, append([]Option{WithIndexedFields("spec.nodeName")}, opts...)...)
	const (
		watchers = 200
		changes  = 2000
		nodes    = 4
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each watcher watches one node from version 1: it must see exactly
	// that node's changes, in order.
	type result struct {
		node int
		rvs  []uint64
	}
	results := make(chan result, watchers)
	var opened sync.WaitGroup
	opened.Add(watchers)
	for i := 0; i < watchers; i++ {
		go func(i int) {
			node := i % nodes
			wa, err := e.Watch(ctx, WatchRequest{
				ResourceVersion: At(1),
				FieldSelector:   fmt.Sprintf("spec.nodeName=n%d", node),
			})
			opened.Done()
			if err != nil {
				t.Error(err)
				results <- result{node: node}
				return
			}
			defer wa.Close()
			var rvs []uint64
			for ev := range wa.Events(ctx) {
				if ev.Type == EventBookmark {
					continue
				}
				rvs = append(rvs, ev.ResourceVersion)
				if len(rvs) == changes/nodes {
					break
				}
			}
			results <- result{node, rvs}
		}(i)
	}
	var readers sync.WaitGroup
	var reads atomic.Int64
	stopReads := make(chan struct{})
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			for {
				select {
				case <-stopReads:
					return
				default:
				}
				if _, err := e.List(ListRequest{FieldSelector: "spec.nodeName=n1", Limit: 10}); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := e.Get(fmt.Sprintf("ns/p%d", r), Version{}, MatchDefault); err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
			}
		}(r)
	}
	opened.Wait()
	want := make([][]uint64, nodes)
	for i := 0; i < changes; i++ {
		rv := uint64(2 + i)
		node := i % nodes
		kind := Added
		if i >= 100 {
			kind = Modified
		}
		if err := w.Apply(kind, rv, pod("ns", fmt.Sprintf("p%d", i%100), "web", fmt.Sprintf("n%d", node), fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		want[node] = append(want[node], rv)
	}
	timeout := time.After(60 * time.Second)
	for i := 0; i < watchers; i++ {
		select {
		case r := <-results:
			if fmt.Sprint(r.rvs) != fmt.Sprint(want[r.node]) {
				t.Fatalf("node %d watcher: %d events, want %d (first %v)", r.node, len(r.rvs), len(want[r.node]), r.rvs[:min(5, len(r.rvs))])
			}
		case <-timeout:
			t.Fatalf("%d of %d watchers finished", i, watchers)
		}
	}
	close(stopReads)
	readers.Wait()
	if reads.Load() == 0 {
		t.Fatal("no reads")
	}
}

// writeWhileReadersCount writes `changes` changes to 50 pods (payloads of
// 256 bytes, versions from 2) while `readers` goroutines each send on
// `counts` how many they received; every reader must have got them all,
// and the writer must not have been held up (by a consumer that never
// reads, in the callers). Returns the writing time.
func writeWhileReadersCount(t *testing.T, w *Writer, changes, readers int, counts <-chan int) time.Duration {
	t.Helper()
	start := time.Now()
	payload := make([]byte, 256)
	for i := 0; i < changes; i++ {
		o := Object{Namespace: "ns", Name: fmt.Sprintf("p%d", i%50), Payload: payload}
		kind := Modified
		if i < 50 {
			kind = Added
		}
		if err := w.Apply(kind, uint64(2+i), o); err != nil {
			t.Fatal(err)
		}
	}
	writeTime := time.Since(start)
	for i := 0; i < readers; i++ {
		select {
		case n := <-counts:
			if n != changes {
				t.Fatalf("a reader got %d of %d", n, changes)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("readers timed out")
		}
	}
	if writeTime > 20*time.Second {
		t.Fatalf("the writer was held up: %v", writeTime)
	}
	return writeTime
}

// A consumer that never reads: the others get everything, and the writer
// is not held up.
func TestConsumerThatNeverReads(t *testing.T) {
	e, w := newEngine(t)
	ctx := context.Background()
	stuck, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	_ = stuck.Events(ctx) // never read
	const readers, changes = 20, 5000
	counts := make(chan int, readers)
	for i := 0; i < readers; i++ {
		wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		go func(ch <-chan Event) {
			n := 0
			last := uint64(1)
			for ev := range ch {
				if ev.ResourceVersion <= last {
					t.Errorf("out of order: %d after %d", ev.ResourceVersion, last)
				}
				last = ev.ResourceVersion
				n++
				if n == changes {
					break
				}
			}
			counts <- n
		}(wa.Events(ctx))
	}
	writeTime := writeWhileReadersCount(t, w, changes, readers, counts)
	t.Logf("%d writes in %v with a stuck consumer; its end: %v", changes, writeTime, stuck.End())
}

// Stop, Close, context cancellation and receiving race on the same
// watches from many goroutines: every channel closes with an end, and
// nothing crashes (run under -race).
func TestCloseRaces(t *testing.T) {
	e, w := newEngine(t)
	stopWrites := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for rv := uint64(2); ; rv++ {
			select {
			case <-stopWrites:
				return
			default:
			}
			if err := w.Apply(Modified, rv, pod("ns", fmt.Sprintf("p%d", rv%10), "web", "n1", "x")); err != nil {
				t.Error(err)
				return
			}
			if rv%64 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		wa, err := e.Watch(ctx, WatchRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ch := wa.Events(ctx)
		wg.Add(4)
		go func() { // the consumer
			defer wg.Done()
			for range ch {
			}
			if wa.End() == nil {
				t.Error("a closed channel without an end")
			}
		}()
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i%7) * time.Millisecond)
			switch i % 3 {
			case 0:
				_ = wa.Stop()
			case 1:
				cancel()
			case 2:
				_ = wa.Close()
			}
		}(i)
		go func() {
			defer wg.Done()
			time.Sleep(3 * time.Millisecond)
			_ = wa.Close()
			_, _, _ = wa.Poll(4)
			_ = wa.Stop()
		}()
		go func() {
			defer wg.Done()
			time.Sleep(2 * time.Millisecond)
			cancel()
			_ = wa.End()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("watches did not end")
	}
	close(stopWrites)
	<-wrote
}

// The finalizer frees a watch that was dropped without Close (a safety
// net: Close is the way). The engine's watchers_active is a gauge its
// dispatcher sets as it routes changes, so the test writes to move it.
func TestFinalizerFreesDroppedWatch(t *testing.T) {
	e, w := newEngine(t)
	rv := uint64(1)
	active := func(want uint64) bool {
		for i := 0; i < 200; i++ {
			runtime.GC()
			rv++
			if err := w.Apply(Modified, rv, pod("ns", "a", "web", "n1", "x")); err != nil && rv == 2 {
				t.Fatal(err)
			}
			st, err := e.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.WatchersActive == want {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	held := make([]*Watch, 10)
	for i := range held {
		wa, err := e.Watch(context.Background(), WatchRequest{})
		if err != nil {
			t.Fatal(err)
		}
		held[i] = wa
	}
	if !active(10) {
		st, _ := e.Stats()
		t.Fatalf("10 watches open: %+v", st)
	}
	runtime.KeepAlive(held)
	held = nil
	if !active(0) {
		st, _ := e.Stats()
		t.Fatalf("%d watchers still active after GC", st.WatchersActive)
	}
}

func TestApplyBatch(t *testing.T) {
	e, w := newEngine(t)
	ctx := context.Background()
	all, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	node, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1), FieldSelector: "spec.nodeName=n3"})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	all2, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer all2.Close()
	all3, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer all3.Close()
	chAll, chNode := all.Events(ctx), node.Events(ctx)
	chAll2, chAll3 := all2.Events(ctx), all3.Events(ctx)
	if n, err := w.ApplyBatch(nil); n != 0 || err != nil {
		t.Fatalf("empty batch: %d, %v", n, err)
	}
	// 300 changes in batches of 1 to 64: adds, then modifications, then
	// deletions of 10 objects on nodes n0..n4.
	var changes []Change
	rv := uint64(1)
	for i := 0; i < 300; i++ {
		rv++
		kind := Modified
		switch {
		case i < 10:
			kind = Added
		case i >= 290:
			kind = Deleted
		}
		k := i % 10
		if i >= 290 {
			k = i - 290
		}
		changes = append(changes, Change{kind, rv, pod("ns", fmt.Sprintf("p%d", k), "web",
			fmt.Sprintf("n%d", k%5), fmt.Sprintf("v%d", i))})
	}
	for i, size := 0, 1; i < len(changes); size = size%64 + 7 {
		j := min(i+size, len(changes))
		n, err := w.ApplyBatch(changes[i:j])
		if n != j-i || err != nil {
			t.Fatalf("batch %d..%d: %d applied, %v", i, j, n, err)
		}
		i = j
	}
	got := collect(t, chAll, len(changes), 10*time.Second)
	wantNode := 0
	for i, ev := range got {
		c := changes[i]
		payload := string(c.Object.Payload)
		if c.Kind == Deleted {
			payload = string(changes[i-10].Object.Payload) // the last state stored
		}
		if ev.ResourceVersion != c.ResourceVersion || ev.Type != EventType(c.Kind) ||
			ev.Key != "ns/"+c.Object.Name || string(ev.Payload) != payload {
			t.Fatalf("event %d: %+v, want %+v", i, ev, c)
		}
		if c.Object.Fields["spec.nodeName"] == "n3" {
			wantNode++
		}
	}
	gotNode := collect(t, chNode, wantNode, 10*time.Second)
	for _, ev := range gotNode {
		if c := changes[ev.ResourceVersion-2]; c.Object.Fields["spec.nodeName"] != "n3" {
			t.Fatalf("node n3's watch got %+v", ev)
		}
	}
	// The same change's payload is at most two Go copies, however many
	// watches receive it: the first copy is not kept, the second is
	// shared by every later watch.
	last := gotNode[len(gotNode)-1]
	copies := map[*byte]bool{&last.Payload[0]: true}
	for _, ch := range []<-chan Event{chAll2, chAll3} {
		for _, ev := range collect(t, ch, len(changes), 10*time.Second) {
			if ev.ResourceVersion == last.ResourceVersion {
				copies[&ev.Payload[0]] = true
			}
		}
	}
	for _, ev := range got {
		if ev.ResourceVersion == last.ResourceVersion {
			copies[&ev.Payload[0]] = true
		}
	}
	if len(copies) > 2 {
		t.Errorf("version %d: %d copies of one payload for 4 watches", last.ResourceVersion, len(copies))
	}
	// Out of order at the third change: two applied.
	bad := []Change{
		{Modified, rv + 1, pod("ns", "x", "web", "n1", "x1")},
		{Modified, rv + 2, pod("ns", "x", "web", "n1", "x2")},
		{Modified, rv + 2, pod("ns", "x", "web", "n1", "x3")},
		{Modified, rv + 3, pod("ns", "x", "web", "n1", "x4")},
	}
	bad[0].Kind = Added
	if n, err := w.ApplyBatch(bad); n != 2 || !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("out of order: %d applied, %v", n, err)
	}
	if v, _ := e.ResourceVersion(); v != rv+2 {
		t.Fatalf("version %d, want %d", v, rv+2)
	}
	// A bad kind: none applied.
	if n, err := w.ApplyBatch([]Change{{Modified, rv + 3, bad[0].Object}, {ChangeKind(9), rv + 4, bad[0].Object}}); n != 0 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad kind: %d applied, %v", n, err)
	}
	w.Close()
	if _, err := w.ApplyBatch(bad[3:]); !errors.Is(err, ErrHandle) {
		t.Fatalf("after close: %v", err)
	}
}
