package clientgo

// Aggregated discovery: /api and /apis asked for as client-go and kubectl
// ask (apidiscovery.k8s.io/v2 APIGroupDiscoveryList first) answer, on
// Herald as on the apiserver, the aggregated document (its Content-Type,
// an ETag, a 304 for If-None-Match), each resource Herald serves with the
// apiserver's entry (but for verbs and subresources: Herald reads only),
// the groups in the apiserver's order.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// aggregatedAccept is client-go's discovery Accept.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

type aggDoc struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Versions []struct {
			Version   string                       `json:"version"`
			Freshness string                       `json:"freshness"`
			Resources []map[string]json.RawMessage `json:"resources"`
		} `json:"versions"`
	} `json:"items"`
}

type aggAnswer struct {
	code        int
	ctype, etag string
	doc         aggDoc
	raw         []byte
}

func getAggregated(ctx context.Context, t *testing.T, client *http.Client, base, path, etag string, token bool) aggAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", aggregatedAccept)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", base, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := aggAnswer{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), etag: resp.Header.Get("ETag"), raw: b}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &a.doc); err != nil {
			t.Errorf("GET %s%s: %v", base, path, err)
		}
	}
	return a
}

// checkAggregated compares /api and /apis in the aggregated form.
func checkAggregated(ctx context.Context, t *testing.T, c *cluster, d *differences) {
	t.Helper()
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	heraldHTTP := &http.Client{Timeout: 30 * time.Second}
	for _, path := range []string{"/api", "/apis"} {
		a := getAggregated(ctx, t, apiHTTP, c.apiURL, path, "", true)
		h := getAggregated(ctx, t, heraldHTTP, c.heraldURL, path, "", false)
		var diffs []jsonDiff
		if a.code != h.code || a.ctype != h.ctype {
			d.add("discovery", "aggregated "+path, "", []jsonDiff{{Path: "(answer)", Herald: fmt.Sprintf("%d %s", h.code, h.ctype), API: fmt.Sprintf("%d %s", a.code, a.ctype)}})
			continue
		}
		if len(h.etag) != 130 || !strings.HasPrefix(h.etag, `"`) {
			diffs = append(diffs, jsonDiff{Path: "(ETag)", Herald: h.etag, API: a.etag})
		} else if again := getAggregated(ctx, t, heraldHTTP, c.heraldURL, path, h.etag, false); again.code != http.StatusNotModified || len(again.raw) != 0 {
			diffs = append(diffs, jsonDiff{Path: "(If-None-Match: its ETag)", Herald: fmt.Sprintf("%d, %d bytes", again.code, len(again.raw)), API: "304, no body"})
		}
		// The apiserver's groups in its order, those Herald serves.
		apiEntries := map[string]map[string]json.RawMessage{}
		var apiOrder []string
		heraldGroups := map[string]bool{}
		for _, g := range h.doc.Items {
			heraldGroups[g.Metadata.Name] = true
		}
		for _, g := range a.doc.Items {
			if heraldGroups[g.Metadata.Name] {
				apiOrder = append(apiOrder, g.Metadata.Name)
			}
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					var name string
					_ = json.Unmarshal(r["resource"], &name)
					apiEntries[g.Metadata.Name+"/"+v.Version+"/"+name] = r
				}
			}
		}
		var heraldOrder []string
		for _, g := range h.doc.Items {
			heraldOrder = append(heraldOrder, g.Metadata.Name)
			for _, v := range g.Versions {
				if v.Freshness != "Current" {
					diffs = append(diffs, jsonDiff{Path: g.Metadata.Name + "/" + v.Version + " freshness", Herald: v.Freshness, API: "Current"})
				}
				for _, r := range v.Resources {
					var name string
					_ = json.Unmarshal(r["resource"], &name)
					key := g.Metadata.Name + "/" + v.Version + "/" + name
					ar, ok := apiEntries[key]
					if !ok {
						diffs = append(diffs, jsonDiff{Path: key, Herald: "listed", API: "(absent)"})
						continue
					}
					for field, hv := range r {
						if field == "verbs" {
							continue
						}
						if string(hv) != string(ar[field]) {
							diffs = append(diffs, jsonDiff{Path: key + " ." + field, Herald: string(hv), API: string(ar[field])})
						}
					}
					for field := range ar {
						if _, ok := r[field]; !ok && field != "subresources" {
							diffs = append(diffs, jsonDiff{Path: key + " ." + field, Herald: "(absent)", API: string(ar[field])})
						}
					}
				}
			}
		}
		if strings.Join(heraldOrder, ",") != strings.Join(apiOrder, ",") {
			diffs = append(diffs, jsonDiff{Path: "(group order)", Herald: strings.Join(heraldOrder, ","), API: strings.Join(apiOrder, ",")})
		}
		d.add("discovery", "aggregated "+path, "", diffs)
		t.Logf("aggregated %s: %d groups on Herald, compared with the apiserver's", path, len(h.doc.Items))
	}
}
