package herald

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// collectBatches reads Batches' channel until it closes or n events came;
// it also checks each message is non-empty and at most BatchMax.
func collectBatches(t *testing.T, ch <-chan []Event, n int, timeout time.Duration) (evs []Event, msgs int, closed bool) {
	t.Helper()
	deadline := time.After(timeout)
	for len(evs) < n {
		select {
		case b, ok := <-ch:
			if !ok {
				return evs, msgs, true
			}
			if len(b) == 0 || len(b) > BatchMax {
				t.Fatalf("a message of %d events", len(b))
			}
			msgs++
			evs = append(evs, b...)
		case <-deadline:
			t.Fatalf("timed out after %d of %d events", len(evs), n)
		}
	}
	return evs, msgs, false
}

func waitBatchesClosed(t *testing.T, ch <-chan []Event, timeout time.Duration) {
	t.Helper()
	select {
	case b, ok := <-ch:
		if ok {
			t.Fatalf("a batch where the end was expected: %d events", len(b))
		}
	case <-time.After(timeout):
		t.Fatalf("the channel did not close in %v", timeout)
	}
}

// Order, selectors, and ownership: the receiver may modify each message's
// slice (a new slice per message; -race checks the binding never touches
// it again).
func TestBatchesOrder(t *testing.T) {
	e, w := newEngine(t)
	ctx := context.Background()
	web, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1), LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	all, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	wch, ach := web.Batches(ctx), all.Batches(ctx)
	if web.Batches(ctx) != wch {
		t.Fatal("a second Batches call returned another channel")
	}
	const n = 3000
	for i := 0; i < n; i++ {
		app := "web"
		if i%3 == 2 {
			app = "db"
		}
		kind := Modified
		if i < 10 {
			kind = Added
		}
		if err := w.Apply(kind, uint64(2+i), pod("ns", fmt.Sprintf("p%d", i%10), app, "n1", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	got, msgs, _ := collectBatches(t, ach, n, 30*time.Second)
	for i, ev := range got {
		if ev.ResourceVersion != uint64(2+i) || string(ev.Payload) != fmt.Sprint(i) || ev.Key != fmt.Sprintf("ns/p%d", i%10) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	t.Logf("%d events in %d messages", len(got), msgs)
	// The web watch: only web changes (a pod going to db is a DELETED for
	// it, then ADDED when back), in order.
	var wantRV []uint64
	for i := 0; i < n; i++ {
		if i%3 != 2 || i >= 10 {
			wantRV = append(wantRV, uint64(2+i))
		}
	}
	gw, _, _ := collectBatches(t, wch, len(wantRV), 30*time.Second)
	for i, ev := range gw {
		if ev.ResourceVersion != wantRV[i] {
			t.Fatalf("web event %d: rv %d, want %d", i, ev.ResourceVersion, wantRV[i])
		}
	}
	// Poll and Events are refused on a Batches watch.
	if _, _, err := all.Poll(1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Poll on a Batches watch: %v", err)
	}
	if _, ok := <-all.Events(ctx); ok {
		t.Fatal("Events after Batches: an open channel")
	}
}

func TestBatchesEnds(t *testing.T) {
	e, w := newEngine(t)
	for i := 0; i < 5; i++ {
		if err := w.Apply(Added, uint64(2+i), pod("ns", fmt.Sprint(i), "web", "n1", "x")); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("stop after events", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(1)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ch := wa.Batches(context.Background())
		got, _, _ := collectBatches(t, ch, 5, 5*time.Second)
		if len(got) != 5 {
			t.Fatalf("%d events", len(got))
		}
		_ = wa.Stop()
		waitBatchesClosed(t, ch, 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || end.Cause != nil {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(6), TimeoutMillis: 30})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		waitBatchesClosed(t, wa.Batches(context.Background()), 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndDeadline {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("watch ctx cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(6)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ch := wa.Batches(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		waitBatchesClosed(t, ch, 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || !errors.Is(end.Cause, context.Canceled) {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("batches ctx cancel", func(t *testing.T) {
		// The consumer stops reading, then cancels its Batches context:
		// the channel still closes, with the context's cause.
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(1)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ctx, cancel := context.WithCancel(context.Background())
		ch := wa.Batches(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		deadline := time.After(5 * time.Second)
		for open := true; open; {
			select {
			case _, open = <-ch:
			case <-deadline:
				t.Fatal("the channel did not close")
			}
		}
		if end := wa.End(); end == nil || end.Reason != EndStopped || !errors.Is(end.Cause, context.Canceled) {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("close", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(6)})
		if err != nil {
			t.Fatal(err)
		}
		ch := wa.Batches(context.Background())
		time.AfterFunc(20*time.Millisecond, func() { _ = wa.Close() })
		waitBatchesClosed(t, ch, 5*time.Second)
		if end := wa.End(); end == nil || end.Reason != EndStopped || !errors.Is(end.Cause, ErrHandle) {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("gone", func(t *testing.T) {
		e2, w2 := newEngine(t, WithHistory(16, 64))
		for i := uint64(0); i < 1000; i++ {
			if err := w2.Apply(Added, 2+i, pod("ns", fmt.Sprintf("p%d", i), "web", "n1", "x")); err != nil {
				t.Fatal(err)
			}
		}
		wa, err := e2.Watch(context.Background(), WatchRequest{ResourceVersion: At(1)})
		if err != nil {
			if !errors.Is(err, ErrGone) {
				t.Fatalf("watch from 1: %v", err)
			}
			return
		}
		defer wa.Close()
		_, _, closed := collectBatches(t, wa.Batches(context.Background()), 1<<30, 10*time.Second)
		end := wa.End()
		if !closed || end == nil || end.Reason != EndGone || end.Requested != 1 || end.Bound <= 1 {
			t.Fatalf("end: %v", end)
		}
	})
	t.Run("already ended", func(t *testing.T) {
		wa, err := e.Watch(context.Background(), WatchRequest{ResourceVersion: At(6)})
		if err != nil {
			t.Fatal(err)
		}
		_ = wa.Close()
		waitBatchesClosed(t, wa.Batches(context.Background()), time.Second)
	})
}

// Many goroutines: 200 Batches watches (half all, half by label) opened
// and consumed concurrently while the writer applies, each checking its
// exact sequence; receivers keep and modify their slices.
func TestBatchesManyGoroutines(t *testing.T) {
	for _, opts := range [][]Option{nil, {WithInlineDispatch(true)}} {
		e, w := newEngine(t, opts...)
		const watches, changes = 200, 2000
		var wg sync.WaitGroup
		var ready sync.WaitGroup
		errs := make(chan error, watches)
		kept := make([][]Event, watches)
		for i := 0; i < watches; i++ {
			wg.Add(1)
			ready.Add(1)
			go func(i int) {
				defer wg.Done()
				req := WatchRequest{ResourceVersion: At(1)}
				web := i%2 == 1
				if web {
					req.LabelSelector = "app=web"
				}
				wa, err := e.Watch(context.Background(), req)
				ready.Done()
				if err != nil {
					errs <- err
					return
				}
				defer wa.Close()
				want := 0
				if web {
					want = changes / 2
				} else {
					want = changes
				}
				n := 0
				next := uint64(2)
				for b := range wa.Batches(context.Background()) {
					for j := range b {
						rv := b[j].ResourceVersion
						if web && (rv-2)%2 != 0 {
							errs <- fmt.Errorf("watch %d: db change %d", i, rv)
							return
						}
						if rv != next {
							errs <- fmt.Errorf("watch %d: rv %d, want %d", i, rv, next)
							return
						}
						if web {
							next += 2
						} else {
							next++
						}
						b[j].Key = "" // the receiver owns the slice
						n++
					}
					kept[i] = b
					if n == want {
						return
					}
				}
				errs <- fmt.Errorf("watch %d: closed after %d: %v", i, n, wa.End())
			}(i)
		}
		ready.Wait()
		for i := 0; i < changes; i++ {
			app := "web"
			if i%2 == 1 {
				app = "db"
			}
			kind := Modified
			if i < 2 {
				kind = Added
			}
			if err := w.Apply(kind, uint64(2+i), pod("ns", fmt.Sprint(i%2), app, "n1", "x")); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("timed out")
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// A Batches consumer that never reads holds up neither the writer nor
// other watches (Events and Batches ones).
func TestBatchesConsumerThatNeverReads(t *testing.T) {
	e, w := newEngine(t)
	ctx := context.Background()
	stuck, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	_ = stuck.Batches(ctx) // never read
	const readers, changes = 20, 5000
	counts := make(chan int, readers)
	for i := 0; i < readers; i++ {
		wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		check := func(rv uint64, last *uint64) {
			if rv <= *last {
				t.Errorf("out of order: %d after %d", rv, *last)
			}
			*last = rv
		}
		if i%2 == 0 {
			go func(ch <-chan []Event) {
				n, last := 0, uint64(1)
				for b := range ch {
					for _, ev := range b {
						check(ev.ResourceVersion, &last)
						n++
					}
					if n >= changes {
						break
					}
				}
				counts <- n
			}(wa.Batches(ctx))
		} else {
			go func(ch <-chan Event) {
				n, last := 0, uint64(1)
				for ev := range ch {
					check(ev.ResourceVersion, &last)
					n++
					if n == changes {
						break
					}
				}
				counts <- n
			}(wa.Events(ctx))
		}
	}
	writeTime := writeWhileReadersCount(t, w, changes, readers, counts)
	t.Logf("%d writes in %v with a stuck Batches consumer; its end: %v", changes, writeTime, stuck.End())
	// The stuck watch still ends: Stop, and its channel closes after what
	// it held.
	_ = stuck.Stop()
	n := 0
	deadline := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case b, ok := <-stuck.Batches(ctx):
			open = ok
			n += len(b)
		case <-deadline:
			t.Fatal("the stuck channel did not close")
		}
	}
	if end := stuck.End(); end == nil {
		t.Fatal("no end")
	} else {
		t.Logf("the stuck consumer then read %d events and %v", n, end)
	}
}

// ReleaseBatch: 8 watches whose consumers give every slice back after
// copying its events out, while the writer goes on; every watch still
// gets every event, in order and intact (a slice reused while a consumer
// still read it, or handed to two watches at once, would show here or to
// -race). Releasing nil, an empty slice and a foreign slice is harmless.
func TestReleaseBatch(t *testing.T) {
	ReleaseBatch(nil)
	ReleaseBatch([]Event{})
	ReleaseBatch(make([]Event, 3, 200)) // not from Batches: pooled like any other
	e, w := newEngine(t)
	ctx := context.Background()
	const watches, n = 8, 4000
	var wg sync.WaitGroup
	got := make([][]Event, watches)
	for i := 0; i < watches; i++ {
		wa, err := e.Watch(ctx, WatchRequest{ResourceVersion: At(1)})
		if err != nil {
			t.Fatal(err)
		}
		defer wa.Close()
		ch := wa.Batches(ctx)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			deadline := time.After(30 * time.Second)
			for len(got[i]) < n {
				select {
				case b, ok := <-ch:
					if !ok {
						return
					}
					got[i] = append(got[i], b...)
					ReleaseBatch(b)
				case <-deadline:
					return
				}
			}
		}(i)
	}
	for i := 0; i < n; i++ {
		kind := Modified
		if i < 10 {
			kind = Added
		}
		if err := w.Apply(kind, uint64(2+i), pod("ns", fmt.Sprintf("p%d", i%10), "web", "n1", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i, evs := range got {
		if len(evs) != n {
			t.Fatalf("watch %d: %d of %d events", i, len(evs), n)
		}
		for k, ev := range evs {
			if ev.ResourceVersion != uint64(2+k) || ev.Key != fmt.Sprintf("ns/p%d", k%10) ||
				string(ev.Payload) != fmt.Sprint(k) {
				t.Fatalf("watch %d event %d: %+v", i, k, ev)
			}
		}
	}
}
