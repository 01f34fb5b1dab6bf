package clientgo

// Reads at a resourceVersion: after the later rounds of churn, lists at the
// version the comparisons began at (Exact: the state then; NotOlderThan and
// 0: the state now) answer what the apiserver answers.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// testHistory lists every resource both serve at resourceVersion rv (Exact,
// the list's own resourceVersion must be rv too), at NotOlderThan rv, at 0,
// and pods in pages of 5 at rv (Exact).
func testHistory(ctx context.Context, t *testing.T, c *cluster, res []apiRes, rv uint64, d *differences) {
	from := d.count()
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range res {
		for _, q := range []string{
			fmt.Sprintf("?resourceVersion=%d&resourceVersionMatch=Exact", rv),
			fmt.Sprintf("?resourceVersion=%d&resourceVersionMatch=NotOlderThan", rv),
			"?resourceVersion=0",
		} {
			path := r.path("") + q
			compareLists(ctx, t, c, apiHTTP, r, path, "history list", d)
			n++
		}
		// An exact list says the version it was asked for.
		path := r.path("") + fmt.Sprintf("?resourceVersion=%d&resourceVersionMatch=Exact", rv)
		hc, _, hb, _ := rawGet(ctx, http.DefaultClient, c.heraldURL, path, jsonType)
		if hc == 200 {
			if got, err := listRV(hb); err != nil || got != rv {
				d.add("history list", r.String(), path, []jsonDiff{{Path: ".metadata.resourceVersion", Herald: fmt.Sprintf("%d (%v)", got, err), API: fmt.Sprint(rv)}})
			}
		}
		if r.GVR.Group == "" && r.GVR.Resource == "pods" {
			// Pages at that version: the items of every page together.
			for _, base := range []string{r.path(""), r.path("") + "?labelSelector=app%3Dweb"} {
				hItems, hErr := pagedItems(ctx, http.DefaultClient, c.heraldURL, base, rv)
				aItems, aErr := pagedItems(ctx, apiHTTP, c.apiURL, base, rv)
				what := fmt.Sprintf("pages of 5 of %s at %d (Exact)", base, rv)
				n++
				if aErr != nil {
					t.Errorf("apiserver %s: %v", what, aErr)
					continue
				}
				if hErr != nil {
					d.add("history list", r.String(), what, []jsonDiff{{Path: "(pages)", Herald: hErr.Error(), API: "ok"}})
					continue
				}
				d.add("history list", r.String(), what, diffJSON(hItems, aItems, 10))
			}
		}
	}
	t.Logf("history: %d lists at resourceVersion %d compared", n, rv)
	d.report(t, from)
}

// pagedItems follows a list's continue tokens (limit 5, the first page at rv
// Exact) and returns the items keyed by namespace/name, in order.
func pagedItems(ctx context.Context, client *http.Client, base, path string, rv uint64) ([]interface{}, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var items []interface{}
	next := fmt.Sprintf("%s%slimit=5&resourceVersion=%d&resourceVersionMatch=Exact", path, sep, rv)
	for pages := 0; pages < 1000; pages++ {
		code, _, body, err := rawGet(ctx, client, base, next, jsonType)
		if err != nil {
			return nil, err
		}
		if code != 200 {
			return nil, fmt.Errorf("page %d: %d %s", pages, code, oneLine(body))
		}
		v, err := decodeJSON(body)
		if err != nil {
			return nil, err
		}
		m, _ := v.(map[string]interface{})
		page, _ := m["items"].([]interface{})
		items = append(items, page...)
		md, _ := m["metadata"].(map[string]interface{})
		cont, _ := md["continue"].(string)
		if cont == "" {
			return items, nil
		}
		next = fmt.Sprintf("%s%slimit=5&continue=%s", path, sep, url.QueryEscape(cont))
	}
	return nil, fmt.Errorf("more than 1000 pages")
}
