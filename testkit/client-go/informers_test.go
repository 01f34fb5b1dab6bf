package clientgo

// Informers and the pager: client-go's shared informers over Herald (JSON
// and protobuf, WatchList on and off) and its metadata informers (in
// protobuf, metadata_test.go) converge to what informers over the
// apiserver hold, with no relist after their initial sync; a pager's list
// in pages of 5 is the full list.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
)

// The informers of one client: pods, configmaps, deployments, and pods by
// field selector and by label selector.
const (
	fieldSelector = "spec.nodeName=node-b"
	labelSelector = "app=web"
)

var storeNames = []string{"pods", "configmaps", "deployments", "pods " + fieldSelector, "pods " + labelSelector}

type informerSet struct {
	name      string
	watchList bool
	counts    *requestCounts
	stores    map[string]cache.SharedIndexInformer
	factories []informers.SharedInformerFactory
	// after the initial sync
	syncLists, syncWatches int
}

// startInformers starts the informers of one client and waits for their
// sync. The WatchList gate must be set as wanted: each reflector reads it
// when it is made, which the wait for the sync comes after.
func startInformers(ctx context.Context, t *testing.T, name string, cfg *rest.Config, watchList bool) *informerSet {
	t.Helper()
	s := &informerSet{name: name, watchList: watchList, counts: newRequestCounts(), stores: map[string]cache.SharedIndexInformer{}}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = s.counts.wrap
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := informers.NewSharedInformerFactory(cs, 0)
	byField := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = fieldSelector }))
	byLabel := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labelSelector }))
	s.stores["pods"] = all.Core().V1().Pods().Informer()
	s.stores["configmaps"] = all.Core().V1().ConfigMaps().Informer()
	s.stores["deployments"] = all.Apps().V1().Deployments().Informer()
	s.stores["pods "+fieldSelector] = byField.Core().V1().Pods().Informer()
	s.stores["pods "+labelSelector] = byLabel.Core().V1().Pods().Informer()
	s.factories = []informers.SharedInformerFactory{all, byField, byLabel}
	for _, f := range s.factories {
		f.Start(ctx.Done())
	}
	syncCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var synced []cache.InformerSynced
	for _, n := range storeNames {
		synced = append(synced, s.stores[n].HasSynced)
	}
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		t.Fatalf("informers %s did not sync within 90 s; requests: %s", name, strings.Join(s.counts.requests(), "\n  "))
	}
	s.syncLists, s.syncWatches = s.counts.totals()
	return s
}

func (s *informerSet) shutdown() {
	for _, f := range s.factories {
		f.Shutdown()
	}
}

// storeDiff compares one store with the reference's: missing, extra and
// differing objects.
func storeDiff(got, want cache.Store) []jsonDiff {
	gm := map[string]interface{}{}
	for _, o := range got.List() {
		gm[objKey(o.(runtime.Object))] = o
	}
	var out []jsonDiff
	seen := map[string]bool{}
	wl := want.List()
	sort.Slice(wl, func(i, j int) bool { return objKey(wl[i].(runtime.Object)) < objKey(wl[j].(runtime.Object)) })
	for _, o := range wl {
		k := objKey(o.(runtime.Object))
		seen[k] = true
		g, ok := gm[k]
		if !ok {
			out = append(out, jsonDiff{Path: k, Herald: "(absent)", API: "in the store"})
			continue
		}
		if !apiequality.Semantic.DeepEqual(g, o) {
			out = append(out, prefix(k, typedDiff(g, o))...)
		}
	}
	for k := range gm {
		if !seen[k] {
			out = append(out, jsonDiff{Path: k, Herald: "in the store", API: "(absent)"})
		}
	}
	return out
}

// converge waits until every store of each set equals the reference's,
// and returns what still differs after the wait (empty: converged).
func converge(ref *informerSet, sets []*informerSet, within time.Duration) map[string][]jsonDiff {
	deadline := time.Now().Add(within)
	for {
		out := map[string][]jsonDiff{}
		for _, s := range sets {
			for _, n := range storeNames {
				if ds := storeDiff(s.stores[n].GetStore(), ref.stores[n].GetStore()); len(ds) > 0 {
					out[s.name+" "+n] = ds
				}
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// referenceSettled waits until the apiserver's informers hold what a
// consistent list of the apiserver returns.
func referenceSettled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ref *informerSet) {
	t.Helper()
	lists := map[string]func() (runtime.Object, error){
		"pods":        func() (runtime.Object, error) { return cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}) },
		"configmaps":  func() (runtime.Object, error) { return cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}) },
		"deployments": func() (runtime.Object, error) { return cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{}) },
		"pods " + fieldSelector: func() (runtime.Object, error) {
			return cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
		},
		"pods " + labelSelector: func() (runtime.Object, error) {
			return cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: labelSelector})
		},
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range storeNames {
		for {
			l, err := lists[n]()
			if err != nil {
				t.Fatalf("apiserver list %s: %v", n, err)
			}
			items, _ := meta.ExtractList(l)
			want := cache.NewStore(cache.MetaNamespaceKeyFunc)
			for _, it := range items {
				_ = want.Add(it)
			}
			ds := storeDiff(ref.stores[n].GetStore(), want)
			if len(ds) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the apiserver's own informer %s does not hold its list after 60 s:%s", n, formatDiffs(ds))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// testInformers runs the informer sets over Herald (JSON and protobuf,
// WatchList on and off) beside a reference set over the apiserver, churns
// twice, and requires convergence and no relist.
func testInformers(ctx context.Context, t *testing.T, c *cluster, d *differences) {
	from := d.count()
	ctx, cancel := context.WithCancel(ctx)
	var sets []*informerSet
	var ref *informerSet
	defer func() {
		// The informers stop with ctx; Shutdown waits for them.
		cancel()
		for _, s := range append(sets, ref) {
			if s != nil {
				s.shutdown()
			}
		}
	}()
	apiCS := kubernetes.NewForConfigOrDie(c.apiConfig())

	ref = startInformers(ctx, t, "apiserver", c.apiConfig(), clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient))
	for _, wl := range []bool{true, false} {
		// The gate is process wide (KUBE_FEATURE_WatchListClient is read
		// once, on its first use); each reflector reads it when made.
		t.Run(fmt.Sprintf("start WatchListClient=%v", wl), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, wl)
			for _, enc := range []struct {
				name string
				cc   rest.ContentConfig
			}{{"json", jsonContent()}, {"protobuf", protoContent()}} {
				name := fmt.Sprintf("herald/%s/watchlist=%v", enc.name, wl)
				s := startInformers(ctx, t, name, withContent(c.heraldConfig(), enc.cc), wl)
				sets = append(sets, s)
				t.Logf("%s synced: %d LIST, %d WATCH requests", name, s.syncLists, s.syncWatches)
			}
		})
	}
	if len(sets) != 4 {
		t.Fatalf("informers over Herald did not all start")
	}
	mref := startMetadataInformers(ctx, t, "apiserver metadata", c.apiConfig())
	mset := startMetadataInformers(ctx, t, "herald metadata/protobuf", c.heraldConfig())
	defer func() {
		cancel()
		mref.factory.Shutdown()
		mset.factory.Shutdown()
	}()
	if ds := metadataWire(ctx, t, c); len(ds) > 0 {
		d.add("informers", "metadata", "the metadata client's Accept", ds)
	}
	// The initial sync: a WatchList informer lists nothing (it streams
	// its state in a watch); the others list once each.
	for _, s := range sets {
		if s.watchList && s.syncLists != 0 {
			d.add("informers", s.name, "initial sync", []jsonDiff{{Path: "(LIST requests)", Herald: fmt.Sprint(s.syncLists),
				API: "0 (a WatchList informer streams its initial state; it fell back to LIST)"}})
		}
		if !s.watchList && s.syncLists != len(storeNames) {
			d.add("informers", s.name, "initial sync", []jsonDiff{{Path: "(LIST requests)", Herald: fmt.Sprint(s.syncLists), API: fmt.Sprint(len(storeNames))}})
		}
	}
	check := func(stage string) {
		referenceSettled(ctx, t, apiCS, ref)
		left := converge(ref, sets, 60*time.Second)
		keys := make([]string, 0, len(left))
		for k := range left {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			d.add("informers", k, stage, left[k])
		}
		for k, ds := range convergeMetadata(mref, mset, 60*time.Second) {
			d.add("informers", k, stage, ds)
		}
	}
	check("after the initial sync")
	for round := 1; round <= 2; round++ {
		churnMore(ctx, t, apiCS, round)
		check(fmt.Sprintf("after churn round %d", round))
	}
	// No relist after the initial sync: no more LIST, and no watch asking
	// for the initial events again.
	for _, s := range sets {
		lists, watches := s.counts.totals()
		if lists != s.syncLists {
			d.add("informers", s.name, "after the initial sync", []jsonDiff{{Path: "(relists: LIST requests after the sync)", Herald: fmt.Sprint(lists - s.syncLists), API: "0"}})
		}
		reqs := s.counts.requests()
		initial := 0
		for _, r := range reqs {
			if strings.Contains(r, "sendInitialEvents=true") {
				initial++
			}
		}
		if s.watchList && initial != len(storeNames) {
			d.add("informers", s.name, "after the initial sync", []jsonDiff{{Path: "(watches with sendInitialEvents=true)", Herald: fmt.Sprint(initial), API: fmt.Sprint(len(storeNames))}})
		}
		t.Logf("%s: %d LIST, %d WATCH requests in all (%d LIST, %d WATCH at sync)", s.name, lists, watches, s.syncLists, s.syncWatches)
		if t.Failed() {
			t.Logf("%s requests:\n  %s", s.name, strings.Join(reqs, "\n  "))
		}
	}
	if ds := mset.relists(); len(ds) > 0 {
		d.add("informers", mset.name, "after the initial sync", ds)
	}
	lists, watches := mset.counts.totals()
	t.Logf("%s: %d LIST, %d WATCH requests in all (%d LIST at sync)", mset.name, lists, watches, mset.syncLists)
	d.report(t, from)
}

// testPager lists every built-in resource both serve with client-go's pager
// (pages of 5) over Herald, in JSON and protobuf, and requires the full list
// the apiserver gives (and that it did page, without falling back to a full
// list).
func testPager(ctx context.Context, t *testing.T, c *cluster, res []apiRes, d *differences) {
	from := d.count()
	acfg := c.apiConfig()
	inParallel(len(res), func(i int) {
		r := res[i]
		if !r.builtin() {
			return
		}
		gv := r.GVR.GroupVersion()
		listKind := gv.WithKind(r.API.Kind + "List")
		// full lists the whole at exactly rv: the state the pager's list
		// was read at (objects that change on their own, such as the
		// apiserver's lease, make two reads at different moments differ).
		full := func(cfg *rest.Config, rv string) (runtime.Object, error) {
			rc, err := typedREST(cfg, gv)
			if err != nil {
				return nil, err
			}
			out, err := typedScheme.New(listKind)
			if err != nil {
				return nil, err
			}
			return out, rc.Get().AbsPath(r.path("")).Param("resourceVersion", rv).
				Param("resourceVersionMatch", "Exact").Do(ctx).Into(out)
		}
		// pagerList lists in pages of 5, counting the requests.
		pagerList := func(cfg *rest.Config) (runtime.Object, bool, int, error) {
			counts := newRequestCounts()
			cfg = rest.CopyConfig(cfg)
			cfg.WrapTransport = counts.wrap
			rc, err := typedREST(cfg, gv)
			if err != nil {
				return nil, false, 0, err
			}
			p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
				out, err := typedScheme.New(listKind)
				if err != nil {
					return nil, err
				}
				return out, rc.Get().AbsPath(r.path("")).VersionedParams(&opts, typedParams).Do(ctx).Into(out)
			}))
			p.PageSize = 5
			p.FullListIfExpired = false
			got, paginated, err := p.List(ctx, metav1.ListOptions{})
			lists, _ := counts.totals()
			return got, paginated, lists, err
		}
		for _, enc := range []struct {
			name string
			cc   rest.ContentConfig
		}{{"json", jsonContent()}, {"protobuf", protoContent()}} {
			what := fmt.Sprintf("pager (%s, pages of 5) over %s", enc.name, r.path(""))
			got, paginated, pages, err := pagerList(withContent(c.heraldConfig(), enc.cc))
			if err != nil {
				d.add("pager", r.String(), what, []jsonDiff{{Path: "(error)", Herald: err.Error(), API: "ok"}})
				continue
			}
			at, err := meta.ListAccessor(got)
			if err != nil {
				t.Errorf("Herald's pager list %s (%s): %v", r, enc.name, err)
				continue
			}
			// The apiserver in the same encoding (what an encoding carries
			// differs: protobuf has no TypeMeta for embedded objects, such
			// as a StatefulSet's volumeClaimTemplates), at Herald's version.
			want, err := full(withContent(acfg, enc.cc), at.GetResourceVersion())
			if err != nil {
				t.Errorf("apiserver list %s (%s) at %s: %v", r, enc.name, at.GetResourceVersion(), err)
				continue
			}
			wantItems, _ := meta.ExtractList(want)
			_, apiPaginated, apiPages, err := pagerList(withContent(acfg, enc.cc))
			if err != nil {
				t.Errorf("apiserver pager list %s (%s): %v", r, enc.name, err)
				continue
			}
			compareTyped("pager", r.String(), what, got, want, d)
			if pages != apiPages || paginated != apiPaginated {
				d.add("pager", r.String(), what, []jsonDiff{{Path: "(pages)", Herald: fmt.Sprintf("%d requests, paginated %v", pages, paginated),
					API: fmt.Sprintf("%d requests, paginated %v (%d items)", apiPages, apiPaginated, len(wantItems))}})
			}
		}
	})
	d.report(t, from)
}
