// Command bench measures Herald's fan-out through the Go binding against
// Go's native fan-out, interleaved round by round in one process:
//
//   - herald: one Writer applying changes; N watches (everything, no
//     selector), each consumed by a goroutine through Events(ctx).
//   - native: one goroutine sending each change to N channels (one per
//     watcher, the same capacity as Events'), each read by a goroutine.
//
// Each change's payload carries its send time; a receiver records
// write-to-receipt latency. The writer is closed-loop in both: it runs
// as fast as it can but keeps at most -window changes ahead of the
// slowest receiver (native: a full channel blocks the sender, the same
// bound). Deliveries/s is events received / (writing + draining time).
//
//	bindings/go/test.sh --bench [-watchers 1000 -rounds 5 -round 1s]
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	herald "github.com/herald-rs/herald/bindings/go"
)

var (
	watchers = flag.Int("watchers", 1000, "watchers (consumer goroutines)")
	rounds   = flag.Int("rounds", 5, "rounds per system (interleaved)")
	roundDur = flag.Duration("round", time.Second, "writing time per round")
	window   = flag.Int("window", 64, "most changes the writer may be ahead of the slowest receiver (native: its channels hold 64 too)")
	size     = flag.Int("payload", 64, "payload bytes (the first 8: the send time)")
	objects  = flag.Int("objects", 100, "distinct objects written (round robin)")
	rate     = flag.Float64("rate", 0, "writes per second, paced (0: closed loop, as fast as the window lets)")
	only     = flag.String("only", "", "run one system only (herald or native), for profiles")
	cpuprof  = flag.String("cpuprofile", "", "write a CPU profile")
)

type result struct {
	deliveries float64 // per second
	p50, p99   time.Duration
	writes     int
}

// receiver is one watcher's counters and latency samples.
type receiver struct {
	n       atomic.Int64
	samples []int64
	_       [64]byte
}

func (r *receiver) record(payload []byte) {
	sent := int64(binary.LittleEndian.Uint64(payload))
	r.samples = append(r.samples, time.Now().UnixNano()-sent)
	r.n.Add(1)
}

func minReceived(rs []receiver) int64 {
	m := int64(1 << 62)
	for i := range rs {
		if n := rs[i].n.Load(); n < m {
			m = n
		}
	}
	return m
}

func summarize(rs []receiver, writes int, elapsed time.Duration) result {
	var all []int64
	total := int64(0)
	for i := range rs {
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
	return result{float64(total) / elapsed.Seconds(), q(0.50), q(0.99), writes}
}

func payload(now time.Time) []byte {
	p := make([]byte, *size)
	binary.LittleEndian.PutUint64(p, uint64(now.UnixNano()))
	return p
}

// waitWindow holds the writer while it is more than -window changes
// ahead of the slowest receiver (sleeping: a spinning writer would take
// a core from the receivers).
func waitWindow(rs []receiver, writes int) {
	for int64(writes)-minReceived(rs) > int64(*window) {
		time.Sleep(20 * time.Microsecond)
	}
}

// pace holds the writer: to -rate when set, and always to -window.
func pace(start time.Time, writes int, rs []receiver) {
	if *rate > 0 {
		due := start.Add(time.Duration(float64(writes) / *rate * 1e9))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
	}
	if writes%16 == 0 {
		waitWindow(rs, writes)
	}
}

// waitDrained waits until every receiver has want events (or 30 s).
func waitDrained(rs []receiver, want int64) error {
	deadline := time.Now().Add(30 * time.Second)
	for minReceived(rs) < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("receivers stuck at %d of %d", minReceived(rs), want)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

func heraldRound(e *herald.Engine, w *herald.Writer, rv *uint64) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := make([]receiver, *watchers)
	ws := make([]*herald.Watch, *watchers)
	var wg sync.WaitGroup
	for i := range ws {
		wa, err := e.Watch(ctx, herald.WatchRequest{ResourceVersion: herald.At(*rv)})
		if err != nil {
			return result{}, err
		}
		ws[i] = wa
		r := &rs[i]
		r.samples = make([]int64, 0, 1<<12)
		ch := wa.Events(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range ch {
				r.record(ev.Payload)
			}
		}()
	}
	start := time.Now()
	writes := 0
	for time.Since(start) < *roundDur {
		pace(start, writes, rs)
		*rv++
		o := herald.Object{Namespace: "bench", Name: fmt.Sprintf("o%d", writes%*objects), Payload: payload(time.Now())}
		if err := w.Apply(herald.Modified, *rv, o); err != nil {
			return result{}, err
		}
		writes++
	}
	err := waitDrained(rs, int64(writes))
	elapsed := time.Since(start)
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
	return summarize(rs, writes, elapsed), err
}

func nativeRound() (result, error) {
	rs := make([]receiver, *watchers)
	type event struct {
		key     string
		rv      uint64
		payload []byte
	}
	chans := make([]chan event, *watchers)
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan event, 64) // as Events' channel
		r := &rs[i]
		r.samples = make([]int64, 0, 1<<12)
		ch := chans[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range ch {
				r.record(ev.payload)
			}
		}()
	}
	start := time.Now()
	writes := 0
	for time.Since(start) < *roundDur {
		pace(start, writes, rs)
		ev := event{key: fmt.Sprintf("bench/o%d", writes%*objects), rv: uint64(writes), payload: payload(time.Now())}
		for _, ch := range chans {
			ch <- ev
		}
		writes++
	}
	err := waitDrained(rs, int64(writes))
	elapsed := time.Since(start)
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	return summarize(rs, writes, elapsed), err
}

func median(xs []float64) (med, lo, hi float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func main() {
	flag.Parse()
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	e, w, err := herald.NewEngine()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	objs := make([]herald.Object, *objects)
	for i := range objs {
		objs[i] = herald.Object{Namespace: "bench", Name: fmt.Sprintf("o%d", i), Payload: payload(time.Now())}
	}
	rv := uint64(1)
	if err := w.Replace(objs, rv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mode := "closed loop"
	if *rate > 0 {
		mode = fmt.Sprintf("paced at %.0f writes/s", *rate)
	}
	fmt.Printf("fan-out to %d watchers, %d rounds of %v per system (interleaved), %s, payload %d B, window %d, GOMAXPROCS %d\n",
		*watchers, *rounds, *roundDur, mode, *size, *window, runtime.GOMAXPROCS(0))
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
				r, err = heraldRound(e, w, &rv)
				hr = append(hr, r)
			} else {
				r, err = nativeRound()
				nr = append(nr, r)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "round %d %s: %v\n", i+1, sys, err)
				os.Exit(1)
			}
			fmt.Printf("round %d %-6s %9.0f deliveries/s  p50 %9v  p99 %9v  (%d writes)\n",
				i+1, sys, r.deliveries, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.writes)
		}
		if *only != "" {
			continue
		}
		fmt.Printf("round %d herald/native deliveries/s ratio: %.2f\n", i+1, hr[i].deliveries/nr[i].deliveries)
	}
	stat := func(name string, rs []result) {
		var d, p50, p99 []float64
		for _, r := range rs {
			d = append(d, r.deliveries)
			p50 = append(p50, float64(r.p50)/1e3)
			p99 = append(p99, float64(r.p99)/1e3)
		}
		dm, dl, dh := median(d)
		am, al, ah := median(p50)
		bm, bl, bh := median(p99)
		fmt.Printf("%-6s deliveries/s %.2fM [%.2f-%.2f]  p50 %.0f µs [%.0f-%.0f]  p99 %.0f µs [%.0f-%.0f]\n",
			name, dm/1e6, dl/1e6, dh/1e6, am, al, ah, bm, bl, bh)
	}
	if *only != "" {
		return
	}
	fmt.Println("median [min-max] over rounds:")
	stat("herald", hr)
	stat("native", nr)
	var ratios []float64
	for i := range hr {
		ratios = append(ratios, hr[i].deliveries/nr[i].deliveries)
	}
	m, lo, hi := median(ratios)
	fmt.Printf("herald/native deliveries/s per round: median %.2f [%.2f-%.2f]\n", m, lo, hi)
}
