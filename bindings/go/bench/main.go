// Command bench measures Herald's fan-out through the Go binding against
// Go's native fan-out, interleaved round by round in one process:
//
//   - herald: one Writer applying changes; N watches, each consumed by a
//     goroutine through Events(ctx) (with -batches: Batches(ctx), one
//     []Event message per polled batch).
//   - native: one goroutine applying each watcher's filter to each change
//     (a loop over the watchers, no index) and sending it on the channel
//     of each watcher that matches (one per watcher, the same capacity as
//     Events'), each read by a goroutine.
//
// Cases (-mix): all (no selector: every watcher gets every change), node
// (watcher i watches node i: Herald with the field selector
// spec.nodeName=node-i on an engine indexing spec.nodeName; change k is
// for node k mod N, so for one watcher), mixed (one in four watchers
// watches everything, the rest one node each).
//
// Each change's payload carries its send time, its node and its sequence
// number; a receiver records write-to-receipt latency and checks every
// delivery (the next change it should see, its node only, versions
// rising) and its count at the end. The writer is closed-loop in both:
// it runs as fast as it can but no receiver may be more than -window of
// its events behind (native: a full channel blocks the sender, the same
// bound; both writers block until the receivers they wait for wake
// them, see waitWindow); or paced (-rate). Deliveries/s is events received / (writing +
// draining time).
//
//	bindings/go/test.sh --bench [-mix all,node,mixed -watchers 1000 -rounds 5 -round 1s]
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	herald "github.com/herald-rs/herald/bindings/go"
)

var (
	watchers = flag.Int("watchers", 1000, "watchers (consumer goroutines)")
	rounds   = flag.Int("rounds", 5, "rounds per system (interleaved)")
	roundDur = flag.Duration("round", time.Second, "writing time per round")
	window   = flag.Int("window", 64, "most events a receiver may be behind the writer (native: its channels hold 64 too)")
	size     = flag.Int("payload", 64, "payload bytes (at least 24: send time, node, sequence)")
	objects  = flag.Int("objects", 100, "distinct objects written in the all case (round robin)")
	rate     = flag.Float64("rate", 0, "writes per second, paced (0: closed loop, as fast as the window lets)")
	only     = flag.String("only", "", "run one system only (herald or native), for profiles")
	mix      = flag.String("mix", "all,node,mixed", "cases, comma-separated: all (every watcher gets every change), node (watcher i watches node i; each change is for one node, round robin), mixed (one in four watchers watches everything, the rest one node each)")
	cpuprof  = flag.String("cpuprofile", "", "write a CPU profile")
	traceOut = flag.String("trace", "", "write a Go execution trace (go tool trace)")
	inline   = flag.Bool("inline", false, "herald's engine with WithInlineDispatch(true) (the writer fans out when the dispatcher thread is idle)")
	batches  = flag.Bool("batches", false, "herald's consumers receive with Watch.Batches (one channel message per polled batch, []Event) instead of Events (one message per event); native is unchanged (one channel per watcher, one send per event)")
	release  = flag.Bool("release", false, "with -batches: each consumer gives each message's slice back with herald.ReleaseBatch once recorded")
	batch    = flag.Int("batch", 1, "herald's writer applies this many changes per Writer.ApplyBatch call (1: Writer.Apply per change), as a source receiving batches would; native is unchanged (its feeder handles one change at a time either way)")
)

// filter is watcher i's filter: everything, or one node.
type filter struct {
	all  bool
	node int
}

// benchCase is a workload: each watcher's filter; change k is for node
// k % watchers.
type benchCase struct {
	name    string
	filters []filter
	indexed bool // Herald indexes spec.nodeName (selective cases)
}

func makeCase(name string, n int) (benchCase, error) {
	c := benchCase{name: name, filters: make([]filter, n)}
	for i := range c.filters {
		switch name {
		case "all":
			c.filters[i] = filter{all: true}
		case "node":
			c.filters[i] = filter{node: i}
			c.indexed = true
		case "mixed":
			c.filters[i] = filter{all: i%4 == 0, node: i}
			c.indexed = true
		default:
			return c, fmt.Errorf("unknown case %q (all, node, mixed)", name)
		}
	}
	return c, nil
}

type result struct {
	deliveries float64 // per second
	p50, p99   time.Duration
	writes     int
	cpuPer     float64 // the process's CPU time (every thread, user + system) while writing and draining, per delivery, ns
}

// cpuTime is the process's CPU time so far (every thread, Herald's
// included: user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// receiver is one watcher's counters, latency samples and checks: every
// delivery is the next change it should see (sequence, node, order).
type receiver struct {
	n       atomic.Int64
	f       filter
	nodes   int
	next    uint64 // the sequence number it expects next
	lastRV  uint64
	bad     error
	samples []int64
	// need: while the writer waits for this receiver, the count it waits
	// for (noNeed otherwise); see waitWindow.
	need atomic.Int64
	_    [64]byte
}

func newReceivers(c benchCase) []receiver {
	rs := make([]receiver, len(c.filters))
	for i := range rs {
		rs[i].f = c.filters[i]
		rs[i].nodes = len(c.filters)
		if !rs[i].f.all {
			rs[i].next = uint64(rs[i].f.node)
		}
		rs[i].samples = make([]int64, 0, 1<<12)
		rs[i].need.Store(noNeed)
	}
	return rs
}

// want is how many of the first writes changes the receiver should get.
func (r *receiver) want(writes int) int64 {
	if r.f.all {
		return int64(writes)
	}
	if writes <= r.f.node {
		return 0
	}
	return int64((writes - r.f.node + r.nodes - 1) / r.nodes)
}

func (r *receiver) record(payload []byte, rv uint64) {
	now := time.Now().UnixNano()
	sent := int64(binary.LittleEndian.Uint64(payload))
	node := binary.LittleEndian.Uint64(payload[8:])
	seq := binary.LittleEndian.Uint64(payload[16:])
	if r.bad == nil {
		switch {
		case seq != r.next:
			r.bad = fmt.Errorf("got change %d, want %d", seq, r.next)
		case !r.f.all && node != uint64(r.f.node):
			r.bad = fmt.Errorf("watcher of node %d got node %d's change", r.f.node, node)
		case rv <= r.lastRV:
			r.bad = fmt.Errorf("version %d after %d", rv, r.lastRV)
		}
	}
	r.lastRV = rv
	if r.f.all {
		r.next = seq + 1
	} else {
		r.next = seq + uint64(r.nodes)
	}
	r.samples = append(r.samples, now-sent)
	if n := r.n.Add(1); n >= r.need.Load() {
		r.reached(n)
	}
}

// noNeed: the writer waits for no count of this receiver.
const noNeed = math.MaxInt64

// gate wakes the writer waiting for the window (waitWindow): pending
// counts the receivers it waits for; the one that takes it to zero sends
// on ch.
var gate = struct {
	pending atomic.Int64
	ch      chan struct{}
}{ch: make(chan struct{}, 1)}

// reached: the receiver's count reached n, at least what the writer
// waits for; the first to claim the need (the receiver or the writer)
// counts it off.
func (r *receiver) reached(n int64) {
	if need := r.need.Load(); n >= need && r.need.CompareAndSwap(need, noNeed) {
		if gate.pending.Add(-1) == 0 {
			select {
			case gate.ch <- struct{}{}:
			default:
			}
		}
	}
}

// behind: whether some receiver is more than -window events behind.
func behind(rs []receiver, writes int) bool {
	for i := range rs {
		if rs[i].want(writes)-rs[i].n.Load() > int64(*window) {
			return true
		}
	}
	return false
}

// waitWindow holds the writer until no receiver is more than -window
// events behind its first writes changes. It blocks, and the receiver
// whose delivery ends the wait wakes it (a receiver compares its count
// with its need, an atomic load, on each delivery): both systems' writers
// resume as soon as the window allows, as native's does from a blocking
// channel send. (Sleeping in a loop instead left the machine idle a
// fifth of the time in the mixed case: a 20 µs sleep lasts up to 1 ms
// once nothing else runs.) The 10 ms timeout is a safety net only: the
// condition is checked again after every wake. After 10 s it gives up
// (a watch that ended holds its receiver back for ever): the round then
// fails its final check, which says which watcher fell short.
func waitWindow(rs []receiver, writes int) {
	deadline := time.Now().Add(10 * time.Second)
	for behind(rs, writes) && time.Now().Before(deadline) {
		select {
		case <-gate.ch: // a stale wake from an earlier wait
		default:
		}
		for i := range rs {
			r := &rs[i]
			need := r.want(writes) - int64(*window)
			if r.n.Load() >= need {
				continue
			}
			gate.pending.Add(1)
			r.need.Store(need)
			r.reached(r.n.Load()) // it may have got there meanwhile
		}
		if gate.pending.Load() > 0 {
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-gate.ch:
			case <-t.C:
			}
			t.Stop()
		}
		// Take back the needs not reached (after a timeout), counting
		// them off as a receiver would.
		for i := range rs {
			if rs[i].need.Load() != noNeed {
				rs[i].reached(math.MaxInt64)
			}
		}
	}
}

func summarize(rs []receiver, writes int, elapsed, cpu time.Duration) (result, error) {
	var all []int64
	total := int64(0)
	for i := range rs {
		if rs[i].bad != nil {
			return result{}, fmt.Errorf("watcher %d: %v", i, rs[i].bad)
		}
		if got, want := rs[i].n.Load(), rs[i].want(writes); got != want {
			return result{}, fmt.Errorf("watcher %d: %d events, want %d", i, got, want)
		}
		all = append(all, rs[i].samples...)
		total += rs[i].n.Load()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return time.Duration(all[int(p*float64(len(all)-1))])
	}
	return result{deliveries: float64(total) / elapsed.Seconds(), p50: q(0.50), p99: q(0.99), writes: writes,
		cpuPer: float64(cpu) / float64(max(total, 1))}, nil
}

// payload: the send time, the change's node and its sequence number.
func payload(now time.Time, node, seq int) []byte {
	p := make([]byte, *size)
	binary.LittleEndian.PutUint64(p, uint64(now.UnixNano()))
	binary.LittleEndian.PutUint64(p[8:], uint64(node))
	binary.LittleEndian.PutUint64(p[16:], uint64(seq))
	return p
}

// pace holds the writer: to -rate when set, and always to -window
// (waitWindow). The window is checked every `every` writes.
func pace(start time.Time, writes, every int, rs []receiver) {
	if *rate > 0 {
		due := start.Add(time.Duration(float64(writes) / *rate * 1e9))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
	}
	if writes%every == 0 {
		waitWindow(rs, writes)
	}
}

// checkEvery: how often the writer checks the window (a node watcher
// gets one change in n: checking it every 16 writes would only cost).
func checkEvery(c benchCase) int {
	for _, f := range c.filters {
		if f.all {
			return 16
		}
	}
	return 256
}

// waitDrained waits until every receiver has what it should (or 30 s).
func waitDrained(rs []receiver, writes int) error {
	deadline := time.Now().Add(30 * time.Second)
	for i := range rs {
		for rs[i].n.Load() < rs[i].want(writes) {
			if time.Now().After(deadline) {
				return fmt.Errorf("watcher %d stuck at %d of %d", i, rs[i].n.Load(), rs[i].want(writes))
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return nil
}

// names: the objects' names, keys and field maps, made once per case, so
// that each change costs both systems the same on the writer's side (one
// payload allocation), not string formatting.
type names struct {
	name, key []string
	fields    []map[string]string
}

func makeNames(c benchCase) names {
	n := *objects
	if c.indexed {
		n = len(c.filters) // one object per node
	}
	ns := names{make([]string, n), make([]string, n), make([]map[string]string, n)}
	for i := 0; i < n; i++ {
		if c.indexed {
			ns.name[i] = fmt.Sprintf("n%d", i)
			ns.fields[i] = map[string]string{"spec.nodeName": fmt.Sprintf("node-%d", i)}
		} else {
			ns.name[i] = fmt.Sprintf("o%d", i)
		}
		ns.key[i] = "bench/" + ns.name[i]
	}
	return ns
}

// object: change k's object (k mod objects in the all case; its node's
// object in the selective ones, so that it never moves out of a filter).
func (ns names) object(k int) int {
	return k % len(ns.name)
}

func changeObject(c benchCase, ns names, k int, now time.Time) herald.Object {
	i := ns.object(k)
	return herald.Object{Namespace: "bench", Name: ns.name[i], Fields: ns.fields[i],
		Payload: payload(now, k%len(c.filters), k)}
}

func heraldRound(c benchCase, ns names, e *herald.Engine, w *herald.Writer, rv *uint64) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := newReceivers(c)
	ws := make([]*herald.Watch, len(rs))
	var wg sync.WaitGroup
	for i := range ws {
		req := herald.WatchRequest{ResourceVersion: herald.At(*rv)}
		if !c.filters[i].all {
			req.FieldSelector = fmt.Sprintf("spec.nodeName=node-%d", c.filters[i].node)
		}
		wa, err := e.Watch(ctx, req)
		if err != nil {
			return result{}, err
		}
		ws[i] = wa
		r := &rs[i]
		wg.Add(1)
		if *batches {
			ch := wa.Batches(ctx)
			go func() {
				defer wg.Done()
				for b := range ch {
					for i := range b {
						r.record(b[i].Payload, b[i].ResourceVersion)
					}
					if *release {
						herald.ReleaseBatch(b)
					}
				}
			}()
			continue
		}
		ch := wa.Events(ctx)
		go func() {
			defer wg.Done()
			for ev := range ch {
				r.record(ev.Payload, ev.ResourceVersion)
			}
		}()
	}
	every := checkEvery(c)
	start, cpu0 := time.Now(), cpuTime()
	writes := 0
	var changes []herald.Change
	for time.Since(start) < *roundDur {
		if *batch <= 1 {
			pace(start, writes, every, rs)
			*rv++
			if err := w.Apply(herald.Modified, *rv, changeObject(c, ns, writes, time.Now())); err != nil {
				return result{}, err
			}
			writes++
			continue
		}
		// A batch: paced and held to the window as the writes one by one
		// (the window is checked when the count crosses a multiple of
		// `every`), then applied in one call.
		pace(start, writes, 1<<62, rs)
		if writes/every != (writes+*batch)/every || writes == 0 {
			waitWindow(rs, writes)
		}
		changes = changes[:0]
		now := time.Now()
		for k := 0; k < *batch; k++ {
			*rv++
			changes = append(changes, herald.Change{Kind: herald.Modified, ResourceVersion: *rv,
				Object: changeObject(c, ns, writes+k, now)})
		}
		if _, err := w.ApplyBatch(changes); err != nil {
			return result{}, err
		}
		writes += len(changes)
	}
	err := waitDrained(rs, writes)
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	for _, wa := range ws {
		if end := wa.End(); end != nil {
			err = fmt.Errorf("a watch ended during the round: %v", end)
		}
	}
	cancel()
	wg.Wait()
	for _, wa := range ws {
		wa.Close()
	}
	res, serr := summarize(rs, writes, elapsed, cpu)
	if err == nil {
		err = serr
	}
	return res, err
}

// nativeRound: one goroutine applies each watcher's filter to each change
// (no index: a loop over the watchers) and sends on a match.
func nativeRound(c benchCase, ns names) (result, error) {
	rs := newReceivers(c)
	type event struct {
		key     string
		rv      uint64
		node    int
		payload []byte
	}
	chans := make([]chan event, len(rs))
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan event, 64) // as Events' channel
		r := &rs[i]
		ch := chans[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range ch {
				r.record(ev.payload, ev.rv)
			}
		}()
	}
	filters := c.filters
	every := checkEvery(c)
	start, cpu0 := time.Now(), cpuTime()
	writes := 0
	for time.Since(start) < *roundDur {
		pace(start, writes, every, rs)
		node := writes % len(filters)
		ev := event{key: ns.key[ns.object(writes)], rv: uint64(writes + 1), node: node, payload: payload(time.Now(), node, writes)}
		for i, ch := range chans {
			if f := &filters[i]; f.all || f.node == ev.node {
				ch <- ev
			}
		}
		writes++
	}
	err := waitDrained(rs, writes)
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	res, serr := summarize(rs, writes, elapsed, cpu)
	if err == nil {
		err = serr
	}
	return res, err
}

func median(xs []float64) (med, lo, hi float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func main() {
	flag.Parse()
	if *size < 24 {
		fmt.Fprintln(os.Stderr, "-payload must be at least 24")
		os.Exit(1)
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := trace.Start(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer trace.Stop()
	}
	mode := "closed loop"
	if *rate > 0 {
		mode = fmt.Sprintf("paced at %.0f writes/s", *rate)
	}
	if *batches {
		mode += ", herald's consumers on Watch.Batches"
	}
	if *batch > 1 {
		mode += fmt.Sprintf(", herald's writer in batches of %d (Writer.ApplyBatch)", *batch)
	}
	fmt.Printf("fan-out to %d watchers, %d rounds of %v per system (interleaved), %s, payload %d B, window %d, GOMAXPROCS %d\n",
		*watchers, *rounds, *roundDur, mode, *size, *window, runtime.GOMAXPROCS(0))
	for _, name := range strings.Split(*mix, ",") {
		c, err := makeCase(strings.TrimSpace(name), *watchers)
		if err == nil {
			err = runCase(c)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func runCase(c benchCase) error {
	var opts []herald.Option
	if c.indexed {
		opts = append(opts, herald.WithIndexedFields("spec.nodeName"))
	}
	opts = append(opts, herald.WithInlineDispatch(*inline))
	e, w, err := herald.NewEngine(opts...)
	if err != nil {
		return err
	}
	defer e.Close()
	defer w.Close()
	ns := makeNames(c)
	objs := make([]herald.Object, len(ns.name))
	for i := range objs {
		objs[i] = changeObject(c, ns, i, time.Now())
	}
	rv := uint64(1)
	if err := w.Replace(objs, rv); err != nil {
		return err
	}
	desc := map[string]string{
		"all":   "every watcher gets every change",
		"node":  "watcher i watches node i (Herald: field selector spec.nodeName=node-i, indexed); change k is for node k mod watchers",
		"mixed": "one in four watchers watches everything, the rest one node each; change k is for node k mod watchers",
	}[c.name]
	fmt.Printf("\n== case %s: %s\n", c.name, desc)
	var hr, nr []result
	for i := 0; i < *rounds; i++ {
		// Alternate which system goes first.
		order := []string{"herald", "native"}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, sys := range order {
			if *only != "" && sys != *only {
				continue
			}
			runtime.GC()
			var r result
			var err error
			if sys == "herald" {
				r, err = heraldRound(c, ns, e, w, &rv)
				hr = append(hr, r)
			} else {
				r, err = nativeRound(c, ns)
				nr = append(nr, r)
			}
			if err != nil {
				return fmt.Errorf("case %s round %d %s: %v", c.name, i+1, sys, err)
			}
			fmt.Printf("round %d %-6s %9.0f deliveries/s  p50 %9v  p99 %9v  cpu %4.0f ns/delivery  (%d writes, every delivery checked)\n",
				i+1, sys, r.deliveries, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.cpuPer, r.writes)
		}
		if *only != "" {
			continue
		}
		fmt.Printf("round %d herald/native deliveries/s ratio: %.2f\n", i+1, hr[i].deliveries/nr[i].deliveries)
	}
	stat := func(name string, rs []result) {
		var d, p50, p99, cpu []float64
		for _, r := range rs {
			cpu = append(cpu, r.cpuPer)
			d = append(d, r.deliveries)
			p50 = append(p50, float64(r.p50)/1e3)
			p99 = append(p99, float64(r.p99)/1e3)
		}
		dm, dl, dh := median(d)
		am, al, ah := median(p50)
		bm, bl, bh := median(p99)
		cm, cl, ch := median(cpu)
		fmt.Printf("%-6s deliveries/s %.2fM [%.2f-%.2f]  p50 %.0f µs [%.0f-%.0f]  p99 %.0f µs [%.0f-%.0f]  cpu/delivery %.0f ns [%.0f-%.0f]\n",
			name, dm/1e6, dl/1e6, dh/1e6, am, al, ah, bm, bl, bh, cm, cl, ch)
	}
	fmt.Printf("case %s, median [min-max] over rounds:\n", c.name)
	if len(hr) > 0 {
		stat("herald", hr)
	}
	if len(nr) > 0 {
		stat("native", nr)
	}
	if *only != "" {
		return nil
	}
	var ratios []float64
	var per []string
	for i := range hr {
		ratios = append(ratios, hr[i].deliveries/nr[i].deliveries)
		per = append(per, fmt.Sprintf("%.2f", ratios[i]))
	}
	m, lo, hi := median(ratios)
	fmt.Printf("case %s herald/native deliveries/s per round: %s; median %.2f [%.2f-%.2f]\n", c.name, strings.Join(per, ", "), m, lo, hi)
	return nil
}
