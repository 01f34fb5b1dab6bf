package clientgo

// Watches, raw: the same watch (from the same resourceVersion, the same
// selector) on both servers during a round of churn gets the same events,
// in order, with the same objects.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// collectWatch reads a JSON watch until it has been quiet for quiet after
// its first event, or until max.
func collectWatch(ctx context.Context, client *http.Client, base, path string, quiet, max time.Duration) ([]watchEvent, error) {
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", jsonType)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	events := make(chan watchEvent)
	errc := make(chan error, 1)
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var e watchEvent
			if err := dec.Decode(&e); err != nil {
				errc <- err
				return
			}
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	var out []watchEvent
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		select {
		case e := <-events:
			out = append(out, e)
			timer.Reset(quiet)
		case <-timer.C:
			return out, nil
		case <-ctx.Done():
			return out, nil
		case err := <-errc:
			if ctx.Err() != nil {
				return out, nil
			}
			return out, fmt.Errorf("watch ended: %v", err)
		}
	}
}

// testWatch opens the same watches on both servers from the current
// resourceVersion, churns, and compares the events.
func testWatch(ctx context.Context, t *testing.T, c *cluster, d *differences) {
	from := d.count()
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	code, _, body, err := rawGet(ctx, apiHTTP, c.apiURL, "/api/v1/pods?limit=1", jsonType)
	if err != nil || code != 200 {
		t.Fatalf("apiserver list: %d %v", code, err)
	}
	rv, err := listRV(body)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{
		"/api/v1/pods", "/api/v1/namespaces/churn-a/pods", "/api/v1/configmaps", "/apis/apps/v1/deployments",
		"/api/v1/pods?labelSelector=" + url.QueryEscape(labelSelector),
		"/api/v1/pods?fieldSelector=" + url.QueryEscape(fieldSelector),
	}
	type result struct {
		events []watchEvent
		err    error
	}
	results := make([][2]result, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		sep := "?"
		if u, _ := url.Parse(p); u.RawQuery != "" {
			sep = "&"
		}
		wp := fmt.Sprintf("%s%swatch=1&resourceVersion=%d&timeoutSeconds=60", p, sep, rv)
		for j, srv := range []struct {
			client *http.Client
			base   string
		}{{http.DefaultClient, c.heraldURL}, {apiHTTP, c.apiURL}} {
			wg.Add(1)
			go func(i, j int, client *http.Client, base string) {
				defer wg.Done()
				ev, err := collectWatch(ctx, client, base, wp, 3*time.Second, 30*time.Second)
				results[i][j] = result{ev, err}
			}(i, j, srv.client, srv.base)
		}
	}
	time.Sleep(500 * time.Millisecond)
	churnMore(ctx, t, kubernetes.NewForConfigOrDie(c.apiConfig()), 3)
	wg.Wait()
	total := 0
	for i, p := range paths {
		h, a := results[i][0], results[i][1]
		what := "WATCH " + p + fmt.Sprintf(" from %d", rv)
		if h.err != nil || a.err != nil {
			if a.err != nil {
				t.Errorf("apiserver %s: %v", what, a.err)
			} else {
				d.add("watch", p, what, []jsonDiff{{Path: "(stream)", Herald: h.err.Error(), API: "ok"}})
			}
			continue
		}
		if len(a.events) == 0 {
			t.Errorf("apiserver %s: no event", what)
		}
		total += len(a.events)
		n := len(h.events)
		if len(a.events) > n {
			n = len(a.events)
		}
		for k := 0; k < n; k++ {
			ev := fmt.Sprintf("event %d", k)
			if k >= len(h.events) {
				d.add("watch", p, what, []jsonDiff{{Path: ev, Herald: "(none)", API: a.events[k].Type + " " + objectName(a.events[k].Object)}})
				continue
			}
			if k >= len(a.events) {
				d.add("watch", p, what, []jsonDiff{{Path: ev, Herald: h.events[k].Type + " " + objectName(h.events[k].Object), API: "(none)"}})
				continue
			}
			he, ae := h.events[k], a.events[k]
			if he.Type != ae.Type || objectName(he.Object) != objectName(ae.Object) {
				d.add("watch", p, what, []jsonDiff{{Path: ev, Herald: he.Type + " " + objectName(he.Object), API: ae.Type + " " + objectName(ae.Object)}})
				continue
			}
			hv, err1 := decodeJSON(he.Object)
			av, err2 := decodeJSON(ae.Object)
			if err1 != nil || err2 != nil {
				d.add("watch", p, what, []jsonDiff{{Path: ev, Herald: fmt.Sprint(err1), API: fmt.Sprint(err2)}})
				continue
			}
			d.add("watch", p, what+" "+ae.Type+" "+objectName(ae.Object), prefix(ev+".object", diffJSON(hv, av, 10)))
		}
	}
	t.Logf("watch: %d watches on each server from resourceVersion %d, %d events from the apiserver", len(paths), rv, total)
	d.report(t, from)
}

// objectName is an event object's namespace/name and resourceVersion.
func objectName(raw json.RawMessage) string {
	var o struct {
		Metadata struct {
			Namespace, Name, ResourceVersion string
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &o)
	n := o.Metadata.Name
	if o.Metadata.Namespace != "" {
		n = o.Metadata.Namespace + "/" + n
	}
	return n + "@" + o.Metadata.ResourceVersion
}
