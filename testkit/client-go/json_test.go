package clientgo

// JSON: every list and every object, as JSON values.

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// jsonList is a list decoded as a JSON value: the list without items, and
// its items keyed by namespace/name.
type jsonList struct {
	rest  map[string]interface{}
	items map[string]interface{}
	keys  []string
}

func decodeList(body []byte) (*jsonList, error) {
	v, err := decodeJSON(body)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %.200s", body)
	}
	l := &jsonList{rest: map[string]interface{}{}, items: map[string]interface{}{}}
	for k, x := range m {
		if k != "items" {
			l.rest[k] = x
		}
	}
	items, _ := m["items"].([]interface{})
	for _, it := range items {
		k := itemKey(it)
		l.items[k] = it
		l.keys = append(l.keys, k)
	}
	// The list's resourceVersion may differ between the two servers.
	if md, ok := l.rest["metadata"].(map[string]interface{}); ok {
		md = copyMap(md)
		delete(md, "resourceVersion")
		l.rest["metadata"] = md
	}
	return l, nil
}

func copyMap(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// itemKey is an item's namespace/name (name alone when cluster scoped).
func itemKey(it interface{}) string {
	m, _ := it.(map[string]interface{})
	md, _ := m["metadata"].(map[string]interface{})
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// compareLists compares one list path on both servers, item by item; it
// returns the apiserver's list (nil when it could not be read).
func compareLists(ctx context.Context, t *testing.T, c *cluster, apiHTTP *http.Client, r apiRes, path, section string, d *differences) *jsonList {
	t.Helper()
	hc, _, hb, herr := rawGet(ctx, http.DefaultClient, c.heraldURL, path, jsonType)
	ac, _, ab, aerr := rawGet(ctx, apiHTTP, c.apiURL, path, jsonType)
	if herr != nil || aerr != nil {
		t.Errorf("GET %s: herald %v, apiserver %v", path, herr, aerr)
		return nil
	}
	if hc != ac {
		d.add(section, r.String(), path, []jsonDiff{{Path: "(status code)", Herald: fmt.Sprint(hc), API: fmt.Sprint(ac)}})
		return nil
	}
	if ac != 200 {
		t.Errorf("GET %s: both answered %d: %.300s", path, ac, ab)
		return nil
	}
	hl, err := decodeList(hb)
	if err != nil {
		t.Errorf("herald GET %s: %v", path, err)
		return nil
	}
	al, err := decodeList(ab)
	if err != nil {
		t.Errorf("apiserver GET %s: %v", path, err)
		return nil
	}
	d.add(section, r.String(), path+" (list)", diffJSON(hl.rest, al.rest, 10))
	var order []jsonDiff
	if len(hl.keys) == len(al.keys) {
		for i := range hl.keys {
			if hl.keys[i] != al.keys[i] {
				order = append(order, jsonDiff{Path: fmt.Sprintf(".items[%d] (order)", i), Herald: hl.keys[i], API: al.keys[i]})
				break
			}
		}
	}
	d.add(section, r.String(), path, order)
	// An item's differences are written relative to the item, so the
	// same difference in a list and in a GET is one entry.
	for _, k := range al.keys {
		h, ok := hl.items[k]
		if !ok {
			d.add(section, r.String(), k+" in LIST "+path, []jsonDiff{{Path: "(item)", Herald: "(absent)", API: "listed"}})
			continue
		}
		d.add("json", r.String(), k+" in LIST "+path, diffJSON(h, al.items[k], 10))
	}
	for _, k := range hl.keys {
		if _, ok := al.items[k]; !ok {
			d.add(section, r.String(), k+" in LIST "+path, []jsonDiff{{Path: "(item)", Herald: "listed", API: "(absent)"}})
		}
	}
	return al
}

// oneLine is a response body on one line, cut at 200 bytes.
func oneLine(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// prefix puts p before every difference's path (the item in a list).
func prefix(p string, ds []jsonDiff) []jsonDiff {
	for i := range ds {
		if ds[i].Path == "(root)" {
			ds[i].Path = p
		} else {
			ds[i].Path = p + ds[i].Path
		}
	}
	return ds
}

// testJSON compares, for every resource both serve: the whole list, the
// list in each corpus namespace, selector lists of pods, every object
// (GET), and a missing object's answer.
func testJSON(ctx context.Context, t *testing.T, c *cluster, res []apiRes, d *differences) {
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	from := d.count()
	var objects, lists atomic.Int64
	inParallel(len(res), func(i int) {
		r := res[i]
		al := compareLists(ctx, t, c, apiHTTP, r, r.path(""), "json list", d)
		lists.Add(1)
		if r.namespaced() {
			for _, ns := range []string{"diff", "churn-a", "churn-b", "kube-system"} {
				compareLists(ctx, t, c, apiHTTP, r, r.path(ns), "json list", d)
				lists.Add(1)
			}
		}
		if al == nil {
			return
		}
		keys := append([]string(nil), al.keys...)
		sort.Strings(keys)
		for _, k := range keys {
			md, _ := al.items[k].(map[string]interface{})["metadata"].(map[string]interface{})
			ns, _ := md["namespace"].(string)
			name, _ := md["name"].(string)
			path := r.objectPath(ns, name)
			hc, _, hb, herr := rawGet(ctx, http.DefaultClient, c.heraldURL, path, jsonType)
			ac, _, ab, aerr := rawGet(ctx, apiHTTP, c.apiURL, path, jsonType)
			objects.Add(1)
			if herr != nil || aerr != nil {
				t.Errorf("GET %s: herald %v, apiserver %v", path, herr, aerr)
				continue
			}
			if hc != ac {
				d.add("json", r.String(), k+" GET", []jsonDiff{{Path: "(status code)", Herald: fmt.Sprintf("%d %s", hc, oneLine(hb)), API: fmt.Sprint(ac)}})
				continue
			}
			hv, err1 := decodeJSON(hb)
			av, err2 := decodeJSON(ab)
			if err1 != nil || err2 != nil {
				t.Errorf("GET %s: JSON: herald %v, apiserver %v", path, err1, err2)
				continue
			}
			d.add("json", r.String(), k+" GET", diffJSON(hv, av, 10))
		}
		// A missing object: the code and the Status both answer.
		ns := ""
		if r.namespaced() {
			ns = "diff"
		}
		path := r.objectPath(ns, "no-such-object")
		hc, _, hb, _ := rawGet(ctx, http.DefaultClient, c.heraldURL, path, jsonType)
		ac, _, ab, _ := rawGet(ctx, apiHTTP, c.apiURL, path, jsonType)
		if hc != ac {
			d.add("json missing object", r.String(), path, []jsonDiff{{Path: "(status code)", Herald: fmt.Sprint(hc), API: fmt.Sprint(ac)}})
		} else if hv, err := decodeJSON(hb); err != nil {
			d.add("json missing object", r.String(), path, []jsonDiff{{Path: "(body)", Herald: fmt.Sprintf("%.200q", hb), API: fmt.Sprintf("%.200s", ab)}})
		} else if av, err := decodeJSON(ab); err == nil {
			d.add("json missing object", r.String(), path, diffJSON(hv, av, 10))
		}
	})
	// Selector lists, as the apiserver filters them: labels, and the field
	// selectors each resource supports in the apiserver (kubectl describe
	// lists events by involvedObject; controllers list pods by node).
	selectors := map[string][]string{
		"v1/pods": {
			"labelSelector=app%3Dweb", "labelSelector=app+in+(api,batch),canary!%3Dtrue", "labelSelector=tier",
			"fieldSelector=spec.nodeName%3Dnode-b", "fieldSelector=spec.nodeName%3D", "fieldSelector=status.phase%3DRunning",
			"fieldSelector=metadata.namespace%3Dchurn-a", "fieldSelector=metadata.name%3Dp-00",
			"labelSelector=app%3Dweb&fieldSelector=spec.nodeName!%3Dnode-a",
			"fieldSelector=spec.restartPolicy%3DAlways", "fieldSelector=spec.schedulerName%3Ddefault-scheduler",
			"fieldSelector=spec.serviceAccountName%3Dbuilder", "fieldSelector=spec.hostNetwork%3Dfalse",
			"fieldSelector=status.podIP%3D10.244.0.10", "fieldSelector=status.nominatedNodeName%3D",
		},
		"v1/events": {
			"fieldSelector=involvedObject.name%3Dp-00,involvedObject.namespace%3Dchurn-a",
			"fieldSelector=involvedObject.kind%3DPod", "fieldSelector=reason%3DBackOff", "fieldSelector=type%3DWarning",
			"fieldSelector=source%3Dkubelet", "fieldSelector=reportingComponent%3Dscheduler",
			// source is source.component, or reportingComponent when that
			// is empty (web.1 has no source: the scheduler's).
			"fieldSelector=source%3Dscheduler", "fieldSelector=source%3D", "fieldSelector=source!%3Dkubelet",
		},
		"v1/secrets":                {"fieldSelector=type%3DOpaque", "fieldSelector=type!%3Dkubernetes.io%2Fbasic-auth"},
		"v1/nodes":                  {"fieldSelector=spec.unschedulable%3Dfalse", "labelSelector=zone%3Dz2"},
		"v1/namespaces":             {"fieldSelector=status.phase%3DActive", "labelSelector=churn"},
		"v1/configmaps":             {"labelSelector=app%3Dweb", "fieldSelector=metadata.name%3Dcm-0"},
		"v1/services":               {"fieldSelector=spec.clusterIP%3DNone", "fieldSelector=spec.type%3DNodePort"},
		"v1/replicationcontrollers": {"fieldSelector=status.replicas%3D0"},
		// apps/v1 replica sets select on no field of their own: the
		// apiserver refuses status.replicas (400), and so does Herald.
		"apps/v1/replicasets":       {"labelSelector=app%3Dweb"},
		"batch/v1/jobs":             {"fieldSelector=status.successful%3D0"},
		"apps/v1/deployments":       {"labelSelector=app+notin+(web)"},
		"v1/persistentvolumeclaims": {"fieldSelector=metadata.namespace%3Dchurn-a"},
	}
	type query struct {
		r apiRes
		q string
	}
	var queries []query
	for _, r := range res {
		for _, q := range selectors[r.String()] {
			queries = append(queries, query{r, q})
		}
	}
	inParallel(len(queries), func(i int) {
		q := queries[i]
		compareLists(ctx, t, c, apiHTTP, q.r, q.r.path("")+"?"+q.q, "json selector list", d)
		lists.Add(1)
	})
	t.Logf("JSON: %d lists and %d objects compared over %d resources; %d difference(s)", lists.Load(), objects.Load(), len(res), d.count()-from)
	d.report(t, from)
}
