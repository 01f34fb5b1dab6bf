package clientgo

// The fleet test's parts: the replicas and HAProxy in front of them, the
// informers that record what they are sent, and the writer.

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// requireHAProxy finds haproxy (HERALD_HAPROXY, else PATH): missing, the
// test fails (scripts/test.sh installs it from Debian's packages).
func requireHAProxy(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HERALD_HAPROXY"); p != "" {
		return p
	}
	p, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy is not on PATH and HERALD_HAPROXY is not set (apt-get install haproxy): %v", err)
	}
	return p
}

// fleet is the replicas and the balancer in front of them.
type fleet struct {
	c        *cluster
	ports    []int
	replicas []*proc
	starts   []int // starts per replica, for log names
	url      string
	stats    string // HAProxy's CSV stats
	proxy    *proc
}

// replicaArgs is a replica's command line: the cluster's upstream, pods
// only, and a shutdown delay longer than HAProxy takes to see /readyz
// fail (a check every 200 ms, down after one failure).
func (f *fleet) replicaArgs(t *testing.T, i int) []string {
	return append(f.c.heraldArgs(t, f.ports[i], "pods"), "--shutdown-delay", "1")
}

func startFleet(ctx context.Context, t *testing.T, c *cluster, haproxy string, n int) *fleet {
	t.Helper()
	f := &fleet{c: c}
	for i := 0; i < n; i++ {
		f.ports = append(f.ports, freePort(t))
		f.replicas = append(f.replicas, nil)
		f.starts = append(f.starts, 0)
		f.start(ctx, t, i)
	}
	front, statsPort := freePort(t), freePort(t)
	f.url = fmt.Sprintf("http://127.0.0.1:%d", front)
	f.stats = fmt.Sprintf("http://127.0.0.1:%d/stats;csv", statsPort)
	var servers strings.Builder
	for i, p := range f.ports {
		fmt.Fprintf(&servers, "    server h%d 127.0.0.1:%d check\n", i, p)
	}
	cfg := filepath.Join(c.dir, "haproxy.cfg")
	// HTTP mode: a client's keep-alive connection is to HAProxy, not to a
	// replica, so a replica's end closes no idle connection under
	// client-go (in TCP mode HAProxy closes them, and a request sent on
	// one as it closes fails with "server closed idle connection", which
	// client-go's reflector answers with a re-list: 1 in 8 runs). A
	// request that reaches no replica, or none that answers, is retried
	// on another (redispatch on every retry) rather than failed.
	writeFile(t, cfg, []byte(fmt.Sprintf(`global
    maxconn 8000
defaults
    mode http
    option http-no-delay
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout http-request 10s
    timeout http-keep-alive 1h
    timeout check 1s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response 503
frontend herald
    bind 127.0.0.1:%d
    default_backend replicas
backend replicas
    balance leastconn
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 200ms fall 1 rise 2
%slisten stats
    mode http
    bind 127.0.0.1:%d
    stats enable
    stats uri /stats
`, front, servers.String(), statsPort)))
	f.proxy = c.procs.start("haproxy", haproxy, "-db", "-f", cfg)
	for i := range f.ports {
		f.waitUp(ctx, t, i)
	}
	return f
}

// start starts replica i (again) and waits for its /readyz.
func (f *fleet) start(ctx context.Context, t *testing.T, i int) {
	t.Helper()
	f.starts[i]++
	name := fmt.Sprintf("herald-%d-start-%d", i, f.starts[i])
	f.replicas[i] = f.c.procs.start(name, f.c.bins.herald, f.replicaArgs(t, i)...)
	waitHTTP(ctx, t, f.replicas[i], http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", f.ports[i]), 2*time.Minute)
}

// status is HAProxy's view of replica i ("UP", "DOWN", ...).
func (f *fleet) status(i int) string {
	resp, err := http.Get(f.stats)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) == 0 {
		return fmt.Sprintf("stats: %v", err)
	}
	col := -1
	for j, h := range rows[0] {
		if strings.TrimPrefix(h, "# ") == "status" {
			col = j
		}
	}
	for _, r := range rows[1:] {
		if len(r) > col && col >= 0 && r[0] == "replicas" && r[1] == fmt.Sprintf("h%d", i) {
			return r[col]
		}
	}
	return "absent"
}

// waitUp waits until HAProxy sends clients to replica i.
func (f *fleet) waitUp(ctx context.Context, t *testing.T, i int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for f.status(i) != "UP" {
		if done, err := f.proxy.exited(); done {
			t.Fatalf("HAProxy ended: %v\n%s", err, tail(f.proxy.logPath, 40))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("HAProxy does not see replica %d up within 30 s: %s\n%s", i, f.status(i), tail(f.proxy.logPath, 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends replica i with SIGKILL and waits for it.
func (f *fleet) kill(i int) {
	_ = syscall.Kill(-f.replicas[i].cmd.Process.Pid, syscall.SIGKILL)
	<-f.replicas[i].done
}

// terminate sends replica i SIGTERM and waits for it to exit (it drains).
func (f *fleet) terminate(t *testing.T, i int) time.Duration {
	t.Helper()
	began := time.Now()
	_ = syscall.Kill(f.replicas[i].cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-f.replicas[i].done:
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %d did not exit within 60 s of SIGTERM\n%s", i, tail(f.replicas[i].logPath, 40))
	}
	return time.Since(began)
}

// seen is one event an informer's handler was given.
type seen struct {
	key     string
	rv      uint64
	at      time.Time
	deleted bool
}

// recorder is one informer and what it was sent: every handler call, its
// lists (re-lists after the first) and watch requests.
type recorder struct {
	name    string
	node    string // its field selector's node ("": all pods)
	lists   atomic.Int64
	watches atomic.Int64
	inf     cache.SharedIndexInformer
	mu      sync.Mutex
	events  []seen
	startRV uint64
	// lists made until its sync (a 429 retried counts once: client-go
	// retries it inside the call)
	syncLists int64
	lastSeen  atomic.Int64 // unix ns of the last event
	// its last requests and how its watches ended (the last
	// [journalLen]), to say why it re-listed
	journal []string
}

const journalLen = 8

// note adds a line to the recorder's journal.
func (r *recorder) note(format string, args ...interface{}) {
	line := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.journal) == journalLen {
		r.journal = append(r.journal[:0], r.journal[1:]...)
	}
	r.journal = append(r.journal, line)
}

// lastNotes is the recorder's journal.
func (r *recorder) lastNotes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.journal...)
}

// journaledWatch passes a watch's events on, noting in the recorder the
// error or the end that ended it and its last bookmark (client-go's
// reflector re-lists after an error event such as a 410 without calling
// its watch error handler).
type journaledWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newJournaledWatch(r *recorder, inner watch.Interface) *journaledWatch {
	j := &journaledWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(j.out)
		lastBookmark := ""
		for ev := range inner.ResultChan() {
			switch ev.Type {
			case watch.Error:
				r.note("watch error event: %v", apierrors.FromObject(ev.Object))
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					lastBookmark = m.GetResourceVersion()
				}
			}
			select {
			case j.out <- ev:
			case <-j.stop:
				return
			}
		}
		r.note("watch ended (last bookmark %q)", lastBookmark)
	}()
	return j
}

func (j *journaledWatch) ResultChan() <-chan watch.Event { return j.out }

func (j *journaledWatch) Stop() {
	j.once.Do(func() { close(j.stop) })
	j.inner.Stop()
}

func rvOf(obj interface{}) (string, uint64, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return "", 0, false
	}
	rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return p.Namespace + "/" + p.Name, rv, true
}

func (r *recorder) record(obj interface{}, deleted bool) {
	key, rv, ok := rvOf(obj)
	if !ok {
		return
	}
	now := time.Now()
	r.lastSeen.Store(now.UnixNano())
	r.mu.Lock()
	r.events = append(r.events, seen{key: key, rv: rv, at: now, deleted: deleted})
	r.mu.Unlock()
}

// newRecorder makes an informer of the fleet's pods (on node, if not
// empty) through cs, counting its lists and watches: a watch that asks
// for initial events is a list too.
func newRecorder(cs kubernetes.Interface, name, node string) *recorder {
	r := &recorder{name: name, node: node}
	sel := func(o *metav1.ListOptions) {
		if node != "" {
			o.FieldSelector = "spec.nodeName=" + node
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			r.lists.Add(1)
			r.note("list rv=%q", o.ResourceVersion)
			sel(&o)
			return cs.CoreV1().Pods(fleetNS).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				r.lists.Add(1)
			}
			r.watches.Add(1)
			r.note("watch rv=%q", o.ResourceVersion)
			sel(&o)
			w, err := cs.CoreV1().Pods(fleetNS).Watch(ctx, o)
			if err != nil {
				r.note("watch refused: %v", err)
				return nil, err
			}
			return newJournaledWatch(r, w), nil
		},
	}
	r.inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	_ = r.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, refl *cache.Reflector, err error) {
		r.note("list and watch ended: %v", err)
		cache.DefaultWatchErrorHandler(ctx, refl, err)
	})
	_, _ = r.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { r.record(obj, false) },
		UpdateFunc: func(_, obj interface{}) { r.record(obj, false) },
		DeleteFunc: func(obj interface{}) { r.record(obj, true) },
	})
	return r
}

// after is the recorder's events above rv, by key, in order.
func (r *recorder) after(rv uint64) map[string][]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]uint64{}
	for _, e := range r.events {
		if e.rv > rv {
			out[e.key] = append(out[e.key], e.rv)
		}
	}
	return out
}

// state is the recorder's store: key -> version.
func (r *recorder) state() map[string]uint64 {
	out := map[string]uint64{}
	for _, o := range r.inf.GetStore().List() {
		if key, rv, ok := rvOf(o); ok {
			out[key] = rv
		}
	}
	return out
}

// writer changes the fleet's pods through the apiserver, one node after
// another, and remembers when it began each write that made a version.
type writer struct {
	cs      kubernetes.Interface
	mu      sync.Mutex
	began   map[uint64]time.Time
	writes  atomic.Int64
	errors  atomic.Int64
	lastErr atomic.Value
}

func fleetPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: fleetNS, Labels: map[string]string{"app": "fleet"}},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("node-%d", i%fleetNodes),
			Containers: []corev1.Container{{Name: "c", Image: "pause"}},
		},
	}
}

func (w *writer) note(began time.Time, obj *corev1.Pod, err error) {
	w.writes.Add(1)
	if err != nil {
		w.errors.Add(1)
		w.lastErr.Store(err.Error())
		return
	}
	if rv, err := strconv.ParseUint(obj.ResourceVersion, 10, 64); err == nil {
		w.mu.Lock()
		w.began[rv] = began
		w.mu.Unlock()
	}
}

// run writes at rate per second until ctx ends: mostly an annotation
// patch; every 10th write deletes the pod and creates it again.
func (w *writer) run(ctx context.Context, rate int) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// One node after another: every node's pods change each second.
		i := (n%fleetNodes + fleetNodes*((n/fleetNodes)%(fleetPods/fleetNodes)))
		name := fmt.Sprintf("p-%d", i)
		began := time.Now()
		if n%10 == 9 {
			err := w.cs.CoreV1().Pods(fleetNS).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
			if err != nil && ctx.Err() == nil {
				w.note(began, nil, err)
				continue
			}
			obj, err := w.cs.CoreV1().Pods(fleetNS).Create(ctx, fleetPod(i), metav1.CreateOptions{})
			if ctx.Err() == nil {
				w.note(began, obj, err)
			}
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"n":"%d"}}}`, n)
		obj, err := w.cs.CoreV1().Pods(fleetNS).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if ctx.Err() == nil {
			w.note(began, obj, err)
		}
	}
}

// latencies are the delays from a write's start to an informer's event,
// for the informers in rs, of the writes begun in [from, to).
func (w *writer) latencies(rs []*recorder, from, to time.Time) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, r := range rs {
		r.mu.Lock()
		for _, e := range r.events {
			if b, ok := w.began[e.rv]; ok && !b.Before(from) && b.Before(to) {
				out = append(out, e.at.Sub(b))
			}
		}
		r.mu.Unlock()
	}
	return out
}

// quantile of ds (sorted here), 0 if empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[int(q*float64(len(ds)-1))]
}

// kubeRS is the fleet's kube-rs watchers: server/examples/fleet_watchers
// (HERALD_FLEET_WATCHERS), run with n watchers at url.
type kubeRS struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// kubeRSWatcher is what one kube-rs watcher reports.
type kubeRSWatcher struct {
	Name   string           `json:"name"`
	Node   string           `json:"node"`
	Inits  int64            `json:"inits"`
	Events [][3]interface{} `json:"events"`
}

func startKubeRS(t *testing.T, url string, n int) *kubeRS {
	t.Helper()
	bin := os.Getenv("HERALD_FLEET_WATCHERS")
	if bin == "" {
		t.Fatal("HERALD_FLEET_WATCHERS is not set (cargo build -p herald-server --example fleet_watchers; the binary under target/debug/examples)")
	}
	cmd := exec.Command(bin, url, strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	k := &kubeRS{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := k.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "synced" {
		t.Fatalf("the kube-rs watchers did not sync: %q %v", line, err)
	}
	return k
}

// finish stops the watchers and returns what each saw.
func (k *kubeRS) finish(t *testing.T) []kubeRSWatcher {
	t.Helper()
	_ = k.stdin.Close()
	line, err := k.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the kube-rs watchers' report: %v", err)
	}
	var out []kubeRSWatcher
	if err := json.Unmarshal([]byte(line), &out); err != nil {
		t.Fatalf("the kube-rs watchers' report: %v", err)
	}
	return out
}

// after is the watcher's events above rv, by key, in order.
func (w *kubeRSWatcher) after(rv uint64) map[string][]uint64 {
	out := map[string][]uint64{}
	for _, e := range w.Events {
		key, _ := e[0].(string)
		v, _ := e[1].(float64)
		if uint64(v) > rv {
			out[key] = append(out[key], uint64(v))
		}
	}
	return out
}
