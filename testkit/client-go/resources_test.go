package clientgo

// The resources both servers serve (discovery against each), kubectl
// api-resources against Herald, and the wait until Herald has caught up.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// apiRes is one resource (group, version, plural) as discovery lists it.
type apiRes struct {
	GVR    schema.GroupVersionResource
	Herald metav1.APIResource // as Herald lists it
	API    metav1.APIResource // as the apiserver lists it
}

func (r apiRes) namespaced() bool { return r.API.Namespaced }

// String is group/version/resource (core: v1/resource).
func (r apiRes) String() string {
	if r.GVR.Group == "" {
		return r.GVR.Version + "/" + r.GVR.Resource
	}
	return r.GVR.Group + "/" + r.GVR.Version + "/" + r.GVR.Resource
}

// path is the resource's collection path, in a namespace when ns is set.
func (r apiRes) path(ns string) string {
	p := "/apis/" + r.GVR.Group + "/" + r.GVR.Version
	if r.GVR.Group == "" {
		p = "/api/" + r.GVR.Version
	}
	if ns != "" && r.namespaced() {
		p += "/namespaces/" + ns
	}
	return p + "/" + r.GVR.Resource
}

// objectPath is one object's path.
func (r apiRes) objectPath(ns, name string) string {
	return r.path(ns) + "/" + url.PathEscape(name)
}

// kubectlName is the name kubectl resolves to exactly this resource:
// plural.version.group (plural alone in the core group).
func (r apiRes) kubectlName() string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Version + "." + r.GVR.Group
}

// builtin reports whether the resource is one of Kubernetes' own (not a
// custom resource of the corpus's CRD).
func (r apiRes) builtin() bool { return !strings.HasSuffix(r.GVR.Group, "herald.dev") }

// served lists the top-level resources (no subresources) a server lists
// in discovery, by group/version/resource.
func served(t *testing.T, who string, cfg *rest.Config) map[schema.GroupVersionResource]metav1.APIResource {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("%s discovery client: %v", who, err)
	}
	// The unaggregated documents from both: the aggregated form has no
	// storageVersionHash (checkAggregated compares it apart).
	dc.UseLegacyDiscovery = true
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Errorf("%s discovery: %v", who, err)
	}
	out := map[schema.GroupVersionResource]metav1.APIResource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Errorf("%s discovery: group version %q: %v", who, l.GroupVersion, err)
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out[gv.WithResource(r.Name)] = r
		}
	}
	return out
}

// discoverResources lists what Herald serves, checks each against the
// apiserver's discovery, and checks `kubectl api-resources` against Herald.
// It returns the resources both serve, sorted.
func discoverResources(ctx context.Context, t *testing.T, c *cluster, d *differences) []apiRes {
	t.Helper()
	herald := served(t, "herald", c.heraldConfig())
	api := served(t, "apiserver", c.apiConfig())
	if len(herald) == 0 {
		t.Fatalf("Herald's discovery lists no resource")
	}
	var both []apiRes
	order := make([]schema.GroupVersionResource, 0, len(herald))
	for gvr := range herald {
		order = append(order, gvr)
	}
	sort.Slice(order, func(i, j int) bool { return gvrString(order[i]) < gvrString(order[j]) })
	for _, gvr := range order {
		h := herald[gvr]
		a, ok := api[gvr]
		if !ok {
			d.add("discovery", gvrString(gvr), "", []jsonDiff{{Path: "(resource)", Herald: "served", API: "(absent)"}})
			continue
		}
		both = append(both, apiRes{GVR: gvr, Herald: h, API: a})
		var diffs []jsonDiff
		cmp := func(field, hv, av string) {
			if hv != av {
				diffs = append(diffs, jsonDiff{Path: "." + field, Herald: hv, API: av})
			}
		}
		cmp("singularName", h.SingularName, a.SingularName)
		cmp("namespaced", strconv.FormatBool(h.Namespaced), strconv.FormatBool(a.Namespaced))
		cmp("kind", h.Kind, a.Kind)
		cmp("shortNames", strings.Join(h.ShortNames, ","), strings.Join(a.ShortNames, ","))
		cmp("categories", strings.Join(h.Categories, ","), strings.Join(a.Categories, ","))
		cmp("storageVersionHash", h.StorageVersionHash, a.StorageVersionHash)
		// Herald only reads: its verbs are get, list, watch, each one the
		// apiserver has too.
		hv := append([]string(nil), h.Verbs...)
		sort.Strings(hv)
		if strings.Join(hv, ",") != "get,list,watch" {
			diffs = append(diffs, jsonDiff{Path: ".verbs", Herald: strings.Join(hv, ","), API: "(expected get,list,watch)"})
		}
		for _, v := range hv {
			if !contains(a.Verbs, v) {
				diffs = append(diffs, jsonDiff{Path: ".verbs", Herald: v, API: strings.Join(a.Verbs, ",")})
			}
		}
		d.add("discovery", gvrString(gvr), "", diffs)
	}
	sort.Slice(both, func(i, j int) bool { return both[i].String() < both[j].String() })
	var notServed []string
	for gvr := range api {
		if _, ok := herald[gvr]; !ok {
			notServed = append(notServed, gvrString(gvr))
		}
	}
	sort.Strings(notServed)
	names := make([]string, len(both))
	for i, r := range both {
		names[i] = r.String()
	}
	t.Logf("Herald serves %d resources the apiserver serves: %s", len(both), strings.Join(names, " "))
	t.Logf("the apiserver serves %d resources Herald does not (not compared): %s", len(notServed), strings.Join(notServed, " "))

	checkAPIResources(ctx, t, c, d)
	checkAggregated(ctx, t, c, d)
	return both
}

func gvrString(gvr schema.GroupVersionResource) string {
	return apiRes{GVR: gvr}.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkAPIResources requires `kubectl api-resources -o wide` against Herald
// to list exactly Herald's preferred resources, column for column.
func checkAPIResources(ctx context.Context, t *testing.T, c *cluster, d *differences) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.heraldConfig())
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Errorf("herald preferred resources: %v", err)
	}
	want := map[string]string{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			verbs := append([]string(nil), r.Verbs...)
			row := strings.Join([]string{
				r.Name, strings.Join(r.ShortNames, ","), l.GroupVersion, strconv.FormatBool(r.Namespaced), r.Kind,
				strings.Join(verbs, ","), strings.Join(r.Categories, ","),
			}, " | ")
			want[r.Name+"."+groupOf(l.GroupVersion)] = row
		}
	}
	out, errOut, err := c.kubectl(ctx, true, "api-resources", "-o", "wide")
	if err != nil {
		t.Errorf("kubectl api-resources against Herald: %v\n%s%s", err, out, errOut)
		return
	}
	got := map[string]string{}
	header, rows := splitTable(out)
	if strings.Join(header, ",") != "NAME,SHORTNAMES,APIVERSION,NAMESPACED,KIND,VERBS,CATEGORIES" {
		t.Errorf("kubectl api-resources -o wide: unexpected header %q", header)
		return
	}
	for _, cells := range rows {
		verbs := strings.Trim(cells[5], "[]")
		row := strings.Join([]string{
			cells[0], cells[1], cells[2], cells[3], cells[4], strings.Join(strings.Fields(verbs), ","), cells[6],
		}, " | ")
		got[cells[0]+"."+groupOf(cells[2])] = row
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w := want[k]
		g, ok := got[k]
		if !ok {
			d.add("kubectl api-resources", k, "", []jsonDiff{{Path: "(row)", Herald: "(absent from kubectl's output)", API: w}})
		} else if g != w {
			d.add("kubectl api-resources", k, "", []jsonDiff{{Path: "(row)", Herald: g, API: "discovery: " + w}})
		}
	}
	keys = keys[:0]
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := got[k]
		if _, ok := want[k]; !ok {
			d.add("kubectl api-resources", k, "", []jsonDiff{{Path: "(row)", Herald: g, API: "(not in Herald's discovery)"}})
		}
	}
	t.Logf("kubectl api-resources against Herald: %d rows, discovery's preferred resources: %d", len(got), len(want))
}

func groupOf(groupVersion string) string {
	gv, err := schema.ParseGroupVersion(groupVersion)
	if err != nil {
		return groupVersion
	}
	return gv.Group
}

// splitTable cuts kubectl's column output into cells by the header's
// column starts (columns are left aligned; a header is separated from the
// next by at least two spaces, a cell may hold single spaces).
func splitTable(out string) ([]string, [][]string) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil, nil
	}
	h := lines[0]
	var starts []int
	var header []string
	for i := 0; i < len(h); {
		if h[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(h) && !(h[j] == ' ' && (j+1 >= len(h) || h[j+1] == ' ')) {
			j++
		}
		starts = append(starts, i)
		header = append(header, h[i:j])
		i = j
	}
	var rows [][]string
	for _, l := range lines[1:] {
		cells := make([]string, len(starts))
		for k, s := range starts {
			e := len(l)
			if k+1 < len(starts) && starts[k+1] < e {
				e = starts[k+1]
			}
			if s < len(l) {
				cells[k] = strings.TrimSpace(l[s:e])
			}
		}
		rows = append(rows, cells)
	}
	return header, rows
}

// rawGet is one GET with an Accept header: status, content type, body.
func rawGet(ctx context.Context, client *http.Client, base, path, accept string) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), []byte(b.String()), nil
}

// listRV is a list's metadata.resourceVersion, from a JSON list.
func listRV(body []byte) (uint64, error) {
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return 0, err
	}
	return strconv.ParseUint(l.Metadata.ResourceVersion, 10, 64)
}

// waitCaughtUp waits until, for every resource, Herald's list
// resourceVersion is at least the apiserver's, and returns the highest of
// the apiserver's.
func waitCaughtUp(ctx context.Context, t *testing.T, c *cluster, res []apiRes) uint64 {
	t.Helper()
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var highest uint64
	for _, r := range res {
		code, _, body, err := rawGet(ctx, apiHTTP, c.apiURL, r.path("")+"?limit=1", jsonType)
		if err != nil || code != 200 {
			t.Fatalf("apiserver list %s: %d %v %s", r, code, err, body)
		}
		want, err := listRV(body)
		if err != nil {
			t.Fatalf("apiserver list %s: resourceVersion: %v", r, err)
		}
		if want > highest {
			highest = want
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, _, body, err := rawGet(ctx, http.DefaultClient, c.heraldURL, r.path("")+"?limit=1", jsonType)
			var got uint64
			if err == nil && code == 200 {
				got, err = listRV(body)
				if err == nil && got >= want {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("Herald did not catch up on %s within 60 s: its list resourceVersion %d (%d %v %.300s), the apiserver's %d",
					r, got, code, err, body, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("Herald caught up on %d resources in %.1f s (resourceVersion %d)", len(res), time.Since(start).Seconds(), highest)
	return highest
}

// differences collects what differs between the two servers, grouped:
// one entry per (section, resource, path, Herald's value, the
// apiserver's) with the objects it was seen on, so a difference every pod
// shares is one line.
type differences struct {
	mu    sync.Mutex // the sections compare resources in parallel
	order []string
	m     map[string]*difference
}

type difference struct {
	Section, Resource string
	Diff              jsonDiff
	Objects           []string
}

func newDifferences() *differences { return &differences{m: map[string]*difference{}} }

func (d *differences) add(section, resource, object string, diffs []jsonDiff) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, x := range diffs {
		k := strings.Join([]string{section, resource, x.Path, x.Herald, x.API}, "\x00")
		e, ok := d.m[k]
		if !ok {
			e = &difference{Section: section, Resource: resource, Diff: x}
			d.m[k] = e
			d.order = append(d.order, k)
		}
		if object != "" && !contains(e.Objects, object) {
			e.Objects = append(e.Objects, object)
		}
	}
}

// since is the number of entries so far (to report a section's own).
func (d *differences) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.order)
}

// requestParallelism bounds the requests a section has in flight to each
// server. Herald answers a consistent read once its upstream confirms its
// version: from the apiserver that is a bookmark, which comes a second or
// two after it is asked for, and reads in flight together wait for the
// same one. One at a time, the sections took 50-60 s each on the
// apiserver upstream (1-2 s a read).
const requestParallelism = 8

// inParallel runs f(0) .. f(n-1), up to requestParallelism at once, and
// returns when all have. f may call t.Errorf, not t.Fatal.
func inParallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, requestParallelism)
	for i := 0; i < n; i++ {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			f(i)
		}()
	}
	wg.Wait()
}

// report fails t with every difference added since index from, one
// t.Errorf each.
func (d *differences) report(t *testing.T, from int) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range d.order[from:] {
		e := d.m[k]
		t.Errorf("%s", e)
	}
}

func (e *difference) String() string {
	objs := ""
	if len(e.Objects) > 0 {
		shown := e.Objects
		if len(shown) > 8 {
			shown = shown[:8]
		}
		objs = fmt.Sprintf(" [%d object(s): %s", len(e.Objects), strings.Join(shown, ", "))
		if len(e.Objects) > len(shown) {
			objs += ", ..."
		}
		objs += "]"
	}
	return fmt.Sprintf("DIFF %s %s%s\n      %s", e.Section, e.Resource, objs, e.Diff)
}
