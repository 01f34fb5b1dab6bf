package clientgo

// The fleet: three herald-server replicas on the cluster's upstream behind
// a real HAProxy (HTTP mode, each replica health-checked on /readyz), N
// client-go informers of pods through it (HERALD_FLEET_INFORMERS, 1,000;
// a fifth of all the fleet's pods, the rest of one node's, as kubelets
// watch) and a steady write load through the apiserver. Then one replica
// is killed with SIGKILL and started again, then all three are restarted
// one after another (SIGTERM: /readyz fails for --shutdown-delay, then
// every watch is drained: a bookmark, a clean end).
//
// What must hold: every informer ends with exactly the upstream's history
// for its filter (per pod, the versions a reference informer on the
// apiserver saw above the informer's start, in order, none missed, none
// twice) and a store equal to a list from the apiserver (a quorum read of
// etcd), and no informer re-lists: not after a drain, and not after the
// kill, since every version a client holds is in the surviving replicas'
// windows. Reported: the time until every informer is served again after
// each disruption, and the p99 from write to event of the informers whose
// watch was not cut, in the storm and before it.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const (
	fleetNS    = "fleet"
	fleetNodes = 10
	fleetPods  = 60
	fleetRate  = 10 // writes per second
)

func TestFleet(t *testing.T) {
	bins := requireBinaries(t)
	haproxy := requireHAProxy(t)
	n := 1000
	if s := os.Getenv("HERALD_FLEET_INFORMERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("HERALD_FLEET_INFORMERS=%q: a count", s)
		}
		n = v
	}
	ctx, cancel := testContext(t)
	defer cancel()
	c := startCluster(ctx, t, bins)
	api := kubernetes.NewForConfigOrDie(c.apiConfig())
	if _, err := api.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager runs: the service account admission wants it.
	if _, err := api.CoreV1().ServiceAccounts(fleetNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < fleetPods; i++ {
		if _, err := api.CoreV1().Pods(fleetNS).Create(ctx, fleetPod(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := startFleet(ctx, t, c, haproxy, 3)
	t.Logf("%d replicas behind HAProxy at %s (upstream: %s)", len(f.ports), f.url, c.upstream)

	// The reference: an informer on the apiserver itself.
	ref := newRecorder(api, "reference", "")
	runCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	go ref.inf.Run(runCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), ref.inf.HasSynced) {
		t.Fatal("the reference informer did not sync")
	}
	w := &writer{cs: api, began: map[uint64]time.Time{}}
	writeCtx, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	var writing sync.WaitGroup
	writing.Add(1)
	go func() { defer writing.Done(); w.run(writeCtx, fleetRate) }()

	// The informers, through the balancer; no client-side rate limit.
	cfg := &rest.Config{Host: f.url, QPS: -1}
	cs := kubernetes.NewForConfigOrDie(cfg)
	recs := make([]*recorder, n)
	began := time.Now()
	for i := range recs {
		node := fmt.Sprintf("node-%d", i%fleetNodes)
		if i%5 == 0 {
			node = ""
		}
		recs[i] = newRecorder(cs, fmt.Sprintf("informer-%d", i), node)
		go recs[i].inf.Run(runCtx.Done())
	}
	for _, r := range recs {
		if !cache.WaitForCacheSync(ctx.Done(), r.inf.HasSynced) {
			t.Fatalf("%s did not sync", r.name)
		}
		r.startRV, _ = strconv.ParseUint(r.inf.LastSyncResourceVersion(), 10, 64)
		r.syncLists = r.lists.Load()
	}
	t.Logf("%d informers synced through HAProxy in %.1f s", n, time.Since(began).Seconds())
	nkr := 200
	if s := os.Getenv("HERALD_FLEET_KUBE_RS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("HERALD_FLEET_KUBE_RS=%q: a count", s)
		}
		nkr = v
	}
	began = time.Now()
	kr := startKubeRS(t, f.url, nkr)
	t.Logf("%d kube-rs watchers synced through HAProxy in %.1f s", nkr, time.Since(began).Seconds())
	// Every watcher has listed by now: above this version each must see
	// exactly what the reference sees.
	now, err := api.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, _ := strconv.ParseUint(now.ResourceVersion, 10, 64)
	time.Sleep(5 * time.Second)
	steadyFrom := time.Now().Add(-4 * time.Second)

	// A replica killed, then started again.
	lists0, watches0 := totals(recs)
	listsAtKill := snapshotLists(recs)
	cut := snapshotWatches(recs)
	killedAt := time.Now()
	f.kill(1)
	t.Logf("replica 1 killed (SIGKILL)")
	servedKill := servedAgain(ctx, t, recs, killedAt, 60*time.Second)
	time.Sleep(3 * time.Second)
	stormEnd := time.Now()
	undisturbed := unchanged(recs, cut)
	steady := quantile(w.latencies(recs, steadyFrom, killedAt), 0.99)
	storm := quantile(w.latencies(undisturbed, killedAt, stormEnd), 0.99)
	lists1, watches1 := totals(recs)
	t.Logf("after SIGKILL: every informer served again within %.2f s; %d watches made again, %d re-lists; p99 write->event of the %d informers whose watch was not cut: %v in the storm, %v before it",
		servedKill.Seconds(), watches1-watches0, lists1-lists0, len(undisturbed), storm.Round(time.Millisecond), steady.Round(time.Millisecond))
	f.start(ctx, t, 1)
	f.waitUp(ctx, t, 1)

	// A rolling restart: each replica drained, exited, started again.
	for i := range f.ports {
		cut := snapshotWatches(recs)
		listed := snapshotLists(recs)
		l0, w0 := totals(recs)
		at := time.Now()
		took := f.terminate(t, i)
		served := servedAgain(ctx, t, recs, at, 60*time.Second)
		l1, w1 := totals(recs)
		undisturbed := unchanged(recs, cut)
		p99 := quantile(w.latencies(undisturbed, at, time.Now()), 0.99)
		t.Logf("replica %d drained and exited in %.2f s (SIGTERM, 1 s delay); every informer served again within %.2f s; %d watches made again, %d re-lists; p99 of the %d undisturbed: %v",
			i, took.Seconds(), served.Seconds(), w1-w0, l1-l0, len(undisturbed), p99.Round(time.Millisecond))
		if l1 != l0 {
			t.Errorf("replica %d's drain made informers re-list %d times (goal: 0); why:\n%s", i, l1-l0, relistCauses(recs, listed))
		}
		f.start(ctx, t, i)
		f.waitUp(ctx, t, i)
	}
	if lists1 != lists0 {
		t.Errorf("the SIGKILL made informers re-list %d times: every version they held was in the other replicas' windows (goal: 0); why:\n%s", lists1-lists0, relistCauses(recs, listsAtKill))
	}

	// The end: writes stop, every informer converges to the upstream.
	stopWrites()
	writing.Wait()
	if e := w.errors.Load(); e > 0 {
		t.Logf("writer: %d of %d writes failed (last: %v)", e, w.writes.Load(), w.lastErr.Load())
	}
	want := map[string]map[string]uint64{}
	list, err := api.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		for _, node := range []string{"", p.Spec.NodeName} {
			if want[node] == nil {
				want[node] = map[string]uint64{}
			}
			rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
			want[node][p.Namespace+"/"+p.Name] = rv
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, r := range append([]*recorder{ref}, recs...) {
		for !sameState(r.state(), want[r.node]) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if got := r.state(); !sameState(got, want[r.node]) {
			t.Errorf("%s (node %q): its store (%d pods) is not the apiserver's list (%d pods) after 60 s", r.name, r.node, len(got), len(want[r.node]))
		}
	}
	if ref.lists.Load() != 1 {
		t.Fatalf("the reference informer re-listed (%d lists): its history is not whole", ref.lists.Load())
	}
	bad := 0
	for _, r := range recs {
		if r.lists.Load() != r.syncLists {
			continue
		}
		wantAfter := ref.after(r.startRV)
		got := r.after(r.startRV)
		for key, rvs := range wantAfter {
			if r.node != "" && !onNode(key, r.node) {
				continue
			}
			if fmt.Sprint(got[key]) != fmt.Sprint(rvs) {
				bad++
				if bad <= 10 {
					t.Errorf("%s: %s: versions %v, the apiserver's %v (above %d)", r.name, key, got[key], rvs, r.startRV)
				}
			}
			delete(got, key)
		}
		for key, rvs := range got {
			bad++
			if bad <= 10 {
				t.Errorf("%s: %s: versions %v the apiserver never sent", r.name, key, rvs)
			}
		}
	}
	// The kube-rs watchers: no re-list (each lists once), and above the
	// bound exactly the reference's history.
	time.Sleep(3 * time.Second)
	krRelists, krBad := int64(0), 0
	for _, w := range kr.finish(t) {
		krRelists += w.Inits - 1
		if w.Inits != 1 {
			continue
		}
		got := w.after(bound)
		for key, rvs := range ref.after(bound) {
			if w.Node != "" && !onNode(key, w.Node) {
				continue
			}
			if fmt.Sprint(got[key]) != fmt.Sprint(rvs) {
				krBad++
				if krBad <= 10 {
					t.Errorf("%s: %s: versions %v, the apiserver's %v (above %d)", w.Name, key, got[key], rvs, bound)
				}
			}
			delete(got, key)
		}
		for key, rvs := range got {
			krBad++
			if krBad <= 10 {
				t.Errorf("%s: %s: versions %v the apiserver never sent", w.Name, key, rvs)
			}
		}
	}
	if krRelists > 0 {
		t.Errorf("the kube-rs watchers re-listed %d times (goal: 0)", krRelists)
	}
	t.Logf("%d kube-rs watchers: %d re-lists; %d pod histories differ from the apiserver's above %d", nkr, krRelists, krBad, bound)
	lists, watches := totals(recs)
	var synced int64
	for _, r := range recs {
		synced += r.syncLists
	}
	t.Logf("%d informers: %d lists (%d re-lists after their sync), %d watches; %d pod histories differ from the apiserver's; %d writes",
		n, lists, lists-synced, watches, bad, w.writes.Load())
}

// totals is the informers' lists and watches so far.
func totals(rs []*recorder) (lists, watches int64) {
	for _, r := range rs {
		lists += r.lists.Load()
		watches += r.watches.Load()
	}
	return
}

func snapshotLists(rs []*recorder) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.lists.Load()
	}
	return out
}

// relistCauses names the informers that listed since snap, each with its
// journal: its last requests and how its watches ended.
func relistCauses(rs []*recorder, snap []int64) string {
	var b strings.Builder
	for i, r := range rs {
		if r.lists.Load() == snap[i] {
			continue
		}
		fmt.Fprintf(&b, "  %s (%d lists):\n    %s\n", r.name, r.lists.Load()-snap[i], strings.Join(r.lastNotes(), "\n    "))
	}
	return b.String()
}

func snapshotWatches(rs []*recorder) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.watches.Load()
	}
	return out
}

// unchanged is the informers that made no watch request since snap.
func unchanged(rs []*recorder, snap []int64) []*recorder {
	var out []*recorder
	for i, r := range rs {
		if r.watches.Load() == snap[i] {
			out = append(out, r)
		}
	}
	return out
}

// servedAgain waits until every informer has had an event since at (the
// writer changes every node's pods each second) and returns how long
// that took.
func servedAgain(ctx context.Context, t *testing.T, rs []*recorder, at time.Time, within time.Duration) time.Duration {
	t.Helper()
	deadline := at.Add(within)
	for {
		waiting := 0
		for _, r := range rs {
			if r.lastSeen.Load() < at.UnixNano() {
				waiting++
			}
		}
		if waiting == 0 {
			return time.Since(at)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%d informers had no event within %v of the disruption", waiting, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sameState(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// onNode says whether the fleet pod key (fleet/p-<i>) lives on node.
func onNode(key, node string) bool {
	var i int
	if _, err := fmt.Sscanf(key, fleetNS+"/p-%d", &i); err != nil {
		return false
	}
	return fmt.Sprintf("node-%d", i%fleetNodes) == node
}
