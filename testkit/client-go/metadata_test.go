package clientgo

// Metadata informers: client-go's metadata client (what the garbage
// collector, the namespace and quota controllers and controller-runtime's
// metadata cache use) asks for PartialObjectMetadata in protobuf first;
// metadata informers over Herald converge to metadata informers over the
// apiserver, through the informers' churn, with no relist.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The resources metadata informers follow: built-in kinds and a custom
// resource (whose metadata Herald types again: Go's order at every level).
var metadataGVRs = []schema.GroupVersionResource{
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "configmaps"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "herald.dev", Version: "v1", Resource: "widgets"},
}

// metadataAccept is the metadata client's Accept for a GET or a watch.
const metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

type metadataSet struct {
	name      string
	counts    *requestCounts
	factory   metadatainformer.SharedInformerFactory
	stores    map[string]cache.SharedIndexInformer
	syncLists int
}

// startMetadataInformers starts one client's metadata informers and waits
// for their sync.
func startMetadataInformers(ctx context.Context, t *testing.T, name string, cfg *rest.Config) *metadataSet {
	t.Helper()
	s := &metadataSet{name: name, counts: newRequestCounts(), stores: map[string]cache.SharedIndexInformer{}}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = s.counts.wrap
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.factory = metadatainformer.NewSharedInformerFactory(mc, 0)
	var synced []cache.InformerSynced
	for _, gvr := range metadataGVRs {
		inf := s.factory.ForResource(gvr).Informer()
		s.stores[gvr.String()] = inf
		synced = append(synced, inf.HasSynced)
	}
	s.factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		t.Fatalf("metadata informers %s did not sync within 90 s; requests: %s", name, strings.Join(s.counts.requests(), "\n  "))
	}
	s.syncLists, _ = s.counts.totals()
	return s
}

// convergeMetadata waits until every store of set equals the reference's,
// and returns what still differs after the wait.
func convergeMetadata(ref, set *metadataSet, within time.Duration) map[string][]jsonDiff {
	deadline := time.Now().Add(within)
	for {
		out := map[string][]jsonDiff{}
		for n, inf := range set.stores {
			if ds := storeDiff(inf.GetStore(), ref.stores[n].GetStore()); len(ds) > 0 {
				out[set.name+" "+n] = ds
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// relists is what set asked for again after its sync: LIST requests, and
// watch-lists beyond one per resource.
func (s *metadataSet) relists() []jsonDiff {
	var out []jsonDiff
	lists, _ := s.counts.totals()
	if lists != s.syncLists {
		out = append(out, jsonDiff{Path: "(relists: LIST requests after the sync)", Herald: fmt.Sprint(lists - s.syncLists), API: "0"})
	}
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		initial := 0
		for _, r := range s.counts.requests() {
			if strings.Contains(r, "sendInitialEvents=true") {
				initial++
			}
		}
		if initial != len(metadataGVRs) {
			out = append(out, jsonDiff{Path: "(watches with sendInitialEvents=true)", Herald: fmt.Sprint(initial), API: fmt.Sprint(len(metadataGVRs))})
		}
	}
	return out
}

// metadataWire checks what the metadata client's Accept gets from Herald:
// PartialObjectMetadata in protobuf, as from the apiserver.
func metadataWire(ctx context.Context, t *testing.T, c *cluster) []jsonDiff {
	t.Helper()
	get := func(base string, client *http.Client, token bool) (int, string, []byte) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/namespaces/churn-a/pods/p-00", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", metadataAccept)
		if token {
			req.Header.Set("Authorization", "Bearer "+adminToken)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", base, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), b
	}
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	ac, at, ab := get(c.apiURL, apiHTTP, true)
	hc, ht, hb := get(c.heraldURL, &http.Client{Timeout: 30 * time.Second}, false)
	var out []jsonDiff
	if ac != hc || mediaType(at) != mediaType(ht) {
		out = append(out, jsonDiff{Path: "(GET with the metadata client's Accept)", Herald: fmt.Sprintf("%d %s", hc, ht), API: fmt.Sprintf("%d %s", ac, at)})
	} else if string(ab) != string(hb) {
		out = append(out, jsonDiff{Path: "(GET with the metadata client's Accept: bytes)", Herald: fmt.Sprintf("%q", hb), API: fmt.Sprintf("%q", ab)})
	}
	return out
}
