package clientgo

// TestGenerated: the generated differential (see README.md). Objects of
// every resource the apiserver lets us create, filled at random from their
// Go types (and a custom resource from its CRD's schema), written through
// the real apiserver; then lists, GETs and short watches drawn from every
// list option and encoding, each sent to the apiserver and to Herald and
// compared. Every difference is classified and grouped; one not in
// generated_known_test.go fails the test.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// genScale is the run's size.
type genScale struct {
	Name           string
	PerKind        int // objects written per creatable resource
	Labels, Fields int // label and field selectors per resource
	RVs            int // resourceVersion combinations per resource
	Gets           int // objects read by GET per resource
	AllEncodings   bool
	PageWalks      int
}

var genScales = map[string]genScale{
	"default": {Name: "default", PerKind: 3, Labels: 5, Fields: 8, RVs: 6, Gets: 3, PageWalks: 2},
	"long":    {Name: "long", PerKind: 6, Labels: 100, Fields: 100, RVs: 100, Gets: 6, AllEncodings: true, PageWalks: 3},
}

// genLabelSelectors are drawn from for each resource's lists: valid ones
// over the labels genMeta writes, set-based ones, malformed ones.
var genLabelSelectors = []string{
	"gen=1", "app=a", "app!=a", "app==b", "app in (a,b)", "app notin (a)", "tier", "!tier", "app=a,tier=x",
	"gen.herald.dev/zone", "app in (a),tier notin (y)", "app=", "app in ()",
	"app==", "app in (a", "=x", "app=a=b", "!", "a b", "app,,tier", "x/y/z=1", "app=" + strings.Repeat("v", 70), "app>1", "tier gt 1",
}

// genFieldLabels are the field selectors the apiserver supports beyond
// metadata.name and metadata.namespace, per resource: for built-in
// resources, what kube/schema/served-v1.37.2.json records (generated from
// the real apiserver by probing every field path, see kube/README.md); for
// the test's own CRD, its selectableFields.
func genFieldLabels(gvr string) []string { return genServed[gvr] }

// loadFieldLabels reads them once, before the requests are drawn.
func loadFieldLabels(t *testing.T) {
	genServedOnce.Do(func() {
		genServed = map[string][]string{
			"gen.herald.dev/v1/gizmos": {"spec.color"},
			"gen.herald.dev/v2/gizmos": {"spec.color"},
		}
		path := os.Getenv("HERALD_SERVED_JSON")
		if path == "" {
			path = "../../kube/schema/served-v1.37.2.json"
		}
		data, err := os.ReadFile(path)
		if err != nil {
			genServedErr = err
			return
		}
		var file struct {
			Resources []struct {
				Group, Version, Resource string
				FieldLabels              []string
			}
		}
		if genServedErr = json.Unmarshal(data, &file); genServedErr != nil {
			return
		}
		for _, r := range file.Resources {
			gv := r.Version
			if r.Group != "" {
				gv = r.Group + "/" + r.Version
			}
			for _, f := range r.FieldLabels {
				if f != "metadata.name" && f != "metadata.namespace" {
					genServed[gv+"/"+r.Resource] = append(genServed[gv+"/"+r.Resource], f)
				}
			}
		}
	})
	if genServedErr != nil {
		t.Fatalf("the field labels of kube/schema/served-v1.37.2.json: %v", genServedErr)
	}
}

var (
	genServedOnce sync.Once
	genServed     map[string][]string
	genServedErr  error
)

// genCRD is the test's custom resource: two versions served (v1 stored,
// v2 converted with None), printer columns, a selectable field.
func genCRD() *apiextensionsv1.CustomResourceDefinition {
	schemaJSON := `{"type":"object","properties":{"spec":{"type":"object","properties":{
		"size":{"type":"integer","minimum":0,"maximum":100},
		"color":{"type":"string","enum":["red","green","blue"]},
		"tags":{"type":"array","items":{"type":"string"}},
		"ratio":{"type":"number"},
		"enabled":{"type":"boolean"},
		"when":{"type":"string","format":"date-time"},
		"labels":{"type":"object","additionalProperties":{"type":"string"}},
		"parts":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"integer","minimum":0,"maximum":9}}}},
		"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
		"status":{"type":"object","properties":{"phase":{"type":"string"}}}}}`
	var s apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(schemaJSON), &s); err != nil {
		panic(err)
	}
	cols := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Color", Type: "string", JSONPath: ".spec.color", Priority: 1},
		{Name: "Enabled", Type: "boolean", JSONPath: ".spec.enabled"},
		{Name: "When", Type: "date", JSONPath: ".spec.when"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	deprecated := func(v apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinitionVersion {
		v.Deprecated = true
		return v
	}
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: true, Storage: storage,
			Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: s.DeepCopy()},
			Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			AdditionalPrinterColumns: cols,
			SelectableFields:         []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}},
		}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.gen.herald.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gen.herald.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ShortNames: []string{"gz"}, Categories: []string{"all", "gen"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				// v1 is deprecated: every answer at v1 carries the
				// apiserver's default warning, naming v2.
				deprecated(version("v1", true)), version("v2", false),
			},
		},
	}
}

// genSeed is HERALD_GEN_SEED, or the clock's.
func genSeed(t *testing.T) int64 {
	if s := os.Getenv("HERALD_GEN_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("HERALD_GEN_SEED=%q: %v", s, err)
		}
		return v
	}
	return time.Now().UnixNano() & 0x7fffffff
}

func TestGenerated(t *testing.T) {
	loadFieldLabels(t)
	began := time.Now()
	seed := genSeed(t)
	scaleName := os.Getenv("HERALD_GEN_SCALE")
	if scaleName == "" {
		scaleName = "default"
	}
	scale, ok := genScales[scaleName]
	if !ok {
		t.Fatalf("HERALD_GEN_SCALE=%q: default or long", scaleName)
	}
	t.Logf("GENERATED seed %d, scale %s (reproduce: HERALD_GEN_SEED=%d HERALD_GEN_SCALE=%s)", seed, scale.Name, seed, scale.Name)
	bins := requireBinaries(t)
	ctx, cancel := testContext(t)
	defer cancel()
	c := startCluster(ctx, t, bins)
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatal(err)
	}
	api := &genClient{name: "apiserver", base: c.apiURL, http: apiHTTP}
	herald := &genClient{name: "herald", base: c.heraldURL, http: &http.Client{Timeout: 60 * time.Second}}
	t.Logf("cluster up in %.1f s (herald-server reading %s)", time.Since(began).Seconds(), c.upstream)

	// Namespaces, their default service accounts (no controller manager
	// writes them), the CRD.
	for _, ns := range append(append([]string{}, genNamespaces...), genLimitsNS) {
		mustWrite(ctx, t, api, "/api/v1/namespaces", fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns))
		mustWrite(ctx, t, api, "/api/v1/namespaces/"+ns+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`)
	}
	crd := genCRD()
	crdJSON, _ := json.Marshal(crd)
	mustWrite(ctx, t, api, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", string(crdJSON))
	waitServed(ctx, t, api, "/apis/gen.herald.dev/v2", 60*time.Second, true)
	// Herald serves the CRD's resource once it has seen it (each second);
	// the versions it serves are compared below with the others.
	waitServed(ctx, t, herald, "/apis/gen.herald.dev/v1", 60*time.Second, true)
	waitServed(ctx, t, herald, "/apis/gen.herald.dev/v2", 10*time.Second, false)

	// The resources: the apiserver's discovery, Herald's.
	report := newGenReport()
	apiServed := served(t, "apiserver", c.apiConfig())
	heraldServed := served(t, "herald", c.heraldConfig())
	var listable, creatable []apiRes
	preferred := preferredVersions(t, c.apiConfig())
	for gvr, a := range apiServed {
		r := apiRes{GVR: gvr, API: a, Herald: heraldServed[gvr]}
		stored := contains(a.Verbs, "create") && contains(a.Verbs, "list") // not reviews
		if stored && preferred[gvr.Group+"/"+gvr.Resource] == gvr.Version {
			creatable = append(creatable, r)
		}
		if crdGroupVersion(gvr.Group, gvr.Version) && stored && preferred[gvr.Group+"/"+gvr.Resource] != gvr.Version {
			creatable = append(creatable, r) // the CRD's other version too
		}
		if !contains(a.Verbs, "list") {
			continue
		}
		h, ok := heraldServed[gvr]
		if !ok {
			report.add(r.String(), "discovery", []genFinding{{Class: "missing-resource", Pattern: r.String(), Detail: "the apiserver lists it, Herald's discovery does not"}})
			continue
		}
		listable = append(listable, r)
		var fs []genFinding
		cmp := func(field, hv, av string) {
			if hv != av {
				fs = append(fs, genFinding{Class: "discovery", Pattern: "." + field, Detail: fmt.Sprintf("%s: herald %q, apiserver %q", r, hv, av)})
			}
		}
		cmp("kind", h.Kind, a.Kind)
		cmp("namespaced", strconv.FormatBool(h.Namespaced), strconv.FormatBool(a.Namespaced))
		cmp("singularName", h.SingularName, a.SingularName)
		cmp("shortNames", strings.Join(h.ShortNames, ","), strings.Join(a.ShortNames, ","))
		cmp("categories", strings.Join(h.Categories, ","), strings.Join(a.Categories, ","))
		cmp("storageVersionHash", h.StorageVersionHash, a.StorageVersionHash)
		report.add(r.String(), "discovery "+r.String(), fs)
	}
	sort.Slice(listable, func(i, j int) bool { return listable[i].String() < listable[j].String() })
	sort.Slice(creatable, func(i, j int) bool { return creatable[i].String() < creatable[j].String() })

	// The objects.
	wbegan := time.Now()
	objects, stats := genWriteAll(ctx, t, api, creatable, crd, seed, scale.PerKind)
	var written, fields, tried int
	var lines []string
	for _, st := range stats {
		tried += st.Tried
		written += st.Written
		fields += st.Survived
		line := fmt.Sprintf("  %-60s written %d/%d (%d POSTs), fields generated %d, stored %d", st.Kind, st.Written, st.Tried, st.Attempts, st.Generated, st.Survived)
		if st.Written < st.Tried || st.Tried == 0 {
			line += "; last refusal: " + st.LastError
		}
		lines = append(lines, line)
	}
	t.Logf("GENERATED objects: %d of %d written (%d kinds creatable), %d leaf fields stored, in %.1f s:\n%s",
		written, tried, len(creatable), fields, time.Since(wbegan).Seconds(), strings.Join(lines, "\n"))

	byRes := map[string][]genObject{}
	for _, o := range objects {
		byRes[gvrString(o.Res)] = append(byRes[gvrString(o.Res)], o)
	}
	genCaughtUp(ctx, t, api, herald, listable)
	c.alive(t)

	// The requests.
	rbegan := time.Now()
	listRVs := make([]string, len(listable))
	runParallel(len(listable), 16, func(i int) {
		r := listable[i]
		rng := rand.New(rand.NewSource(kindSeed(seed, r.GVR.GroupVersion().WithKind(r.API.Kind), -1)))
		listRVs[i] = genResourceRequests(ctx, api, herald, r, byRes[gvrString(r.GVR)], scale, rng, report)
	})
	t.Logf("lists and GETs in %.1f s", time.Since(rbegan).Seconds())
	c.alive(t)

	// Watches: a few writes, then a watch from before them on both.
	wbegan = time.Now()
	genWatchWrites(ctx, api, listable, byRes)
	t.Logf("watch writes in %.1f s", time.Since(wbegan).Seconds())
	runParallel(len(listable), 12, func(i int) {
		genWatches(ctx, api, herald, listable[i], listRVs[i], report)
	})
	if len(listable) > 0 {
		// A list at a version far ahead: both wait, then 504.
		r := listable[0]
		p := r.path("") + "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan"
		fbegan := time.Now()
		a := api.do(ctx, http.MethodGet, p, jsonType, nil)
		atook := time.Since(fbegan)
		h := herald.do(ctx, http.MethodGet, p, jsonType, nil)
		htook := time.Since(fbegan) - atook
		q := genReq{Res: r, Kind: "list", Shape: "resourceVersion=future&resourceVersionMatch=NotOlderThan", Path: p, Enc: encJSON, RVMode: "exact"}
		report.count(1)
		report.add(r.String(), q.String(), compareAnswers(q, a, h))
		t.Logf("a list at a future version: the apiserver answered %d after %.1f s, Herald %d after %.1f s", a.code, atook.Seconds(), h.code, htook.Seconds())
	}
	t.Logf("watches in %.1f s", time.Since(wbegan).Seconds())
	c.alive(t)

	genFinish(t, report, len(listable), written, time.Since(began))
}

// genCaughtUp waits until Herald's list resourceVersion of every resource
// is at least the apiserver's (all resources at once: on the apiserver
// upstream each of Herald's consistent reads waits for a bookmark).
func genCaughtUp(ctx context.Context, t *testing.T, api, herald *genClient, res []apiRes) {
	t.Helper()
	start := time.Now()
	errs := make([]string, len(res))
	runParallel(len(res), 32, func(i int) {
		p := res[i].path("") + "?limit=1"
		a := api.do(ctx, http.MethodGet, p, jsonType, nil)
		want, err := listRV(a.body)
		if err != nil {
			errs[i] = fmt.Sprintf("apiserver %s: %d %v", p, a.code, err)
			return
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			h := herald.do(ctx, http.MethodGet, p, jsonType, nil)
			if got, err := listRV(h.body); err == nil && got >= want {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		errs[i] = fmt.Sprintf("Herald did not catch up on %s within 60 s", res[i])
	})
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	t.Logf("Herald caught up on %d resources in %.1f s", len(res), time.Since(start).Seconds())
}

func crdGroupVersion(group, version string) bool { return group == "gen.herald.dev" }

func mustWrite(ctx context.Context, t *testing.T, api *genClient, path, body string) {
	t.Helper()
	resp := api.do(ctx, http.MethodPost, path, jsonType, []byte(body))
	if resp.err != nil || (resp.code != 201 && resp.code != 200 && resp.code != 409) {
		t.Fatalf("POST %s: %d %v %s", path, resp.code, resp.err, resp.body)
	}
}

// waitServed waits until a group version's discovery answers 200.
func waitServed(ctx context.Context, t *testing.T, c *genClient, path string, within time.Duration, must bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp := c.do(ctx, http.MethodGet, path, jsonType, nil)
		if resp.err == nil && resp.code == 200 {
			return
		}
		if time.Now().After(deadline) {
			if must {
				t.Fatalf("%s does not serve %s within %s: %d %v %.200s", c.name, path, within, resp.code, resp.err, resp.body)
			}
			t.Logf("%s does not serve %s within %s: %d %v %.200s", c.name, path, within, resp.code, resp.err, resp.body)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// preferredVersions maps group/resource to the version discovery prefers.
func preferredVersions(t *testing.T, cfg *rest.Config) map[string]string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var groups metav1.APIGroupList
	code, _, body, err := rawGet(context.Background(), hc, cfg.Host, "/apis", jsonType)
	if err != nil || code != 200 || json.Unmarshal(body, &groups) != nil {
		t.Fatalf("apiserver /apis: %d %v", code, err)
	}
	groups.Groups = append(groups.Groups, metav1.APIGroup{Name: "", PreferredVersion: metav1.GroupVersionForDiscovery{Version: "v1"}})
	for g, a := range served(t, "apiserver", cfg) {
		_ = a
		for _, grp := range groups.Groups {
			if grp.Name == g.Group && grp.PreferredVersion.Version == g.Version {
				out[g.Group+"/"+g.Resource] = g.Version
			}
		}
	}
	// A resource absent from its group's preferred version: its first.
	for g := range served(t, "apiserver", cfg) {
		if _, ok := out[g.Group+"/"+g.Resource]; !ok {
			out[g.Group+"/"+g.Resource] = g.Version
		}
	}
	return out
}

// genPair sends one request to both servers (the apiserver first) and
// records what differs. A difference in a list read at different versions
// is asked again (twice at most) before it is classified.
func genPair(ctx context.Context, api, herald *genClient, q genReq, report *genReport) (genResp, genResp) {
	var a, h genResp
	var fs []genFinding
	for try := 0; try < 3; try++ {
		accept := acceptFor(q.Enc, q.Kind != "get")
		if q.Kind == "watch" {
			// Both at once: a watch lasts its timeout, and what it
			// replays does not depend on which server is asked first.
			done := make(chan struct{})
			go func() {
				defer close(done)
				a = api.do(ctx, http.MethodGet, q.Path, accept, nil)
			}()
			h = herald.do(ctx, http.MethodGet, q.Path, accept, nil)
			<-done
		} else {
			a = api.do(ctx, http.MethodGet, q.Path, accept, nil)
			h = herald.do(ctx, http.MethodGet, q.Path, accept, nil)
		}
		fs = compareAnswers(q, a, h)
		if len(fs) == 0 || q.RVMode == "exact" || q.Kind == "watch" || !rvDiffers(a.body, h.body) {
			break
		}
	}
	report.count(1)
	report.add(q.Res.String(), q.String(), fs)
	return a, h
}

func rvDiffers(a, h []byte) bool {
	ar, aerr := listRV(a)
	hr, herr := listRV(h)
	return aerr == nil && herr == nil && ar != hr
}

// genResourceRequests draws and sends one resource's lists and GETs; it
// returns the apiserver's list resourceVersion before them.
func genResourceRequests(ctx context.Context, api, herald *genClient, r apiRes, objs []genObject, scale genScale, rng *rand.Rand, report *genReport) string {
	list := func(ns, shape, query, enc, rvMode string) (genResp, genResp) {
		p := r.path(ns)
		if query != "" {
			p += "?" + query
		}
		if ns != "" && !r.namespaced() {
			p = "/api/v1/namespaces/" + ns + "/" + r.GVR.Resource
			if r.GVR.Group != "" {
				p = "/apis/" + r.GVR.Group + "/" + r.GVR.Version + "/namespaces/" + ns + "/" + r.GVR.Resource
			}
		}
		if ns != "" {
			shape = "ns " + shape
		}
		return genPair(ctx, api, herald, genReq{Res: r, Kind: "list", Shape: shape, Path: p, Enc: enc, RVMode: rvMode}, report)
	}
	// The plain list, in every encoding.
	a, _ := list("", "plain", "", encJSON, "consistent")
	rv := ""
	var items []interface{}
	if v, err := decodeJSON(a.body); err == nil {
		m, _ := v.(map[string]interface{})
		md, _ := m["metadata"].(map[string]interface{})
		rv, _ = md["resourceVersion"].(string)
		items, _ = m["items"].([]interface{})
	}
	for _, enc := range []string{encYAML, encProto, encPOM} {
		list("", "plain", "", enc, "consistent")
	}
	for _, io := range []string{"", "None", "Metadata", "Object"} {
		q := ""
		if io != "" {
			q = "includeObject=" + io
		}
		list("", "includeObject", q, encTable, "consistent")
	}
	otherEnc := func() string {
		return []string{encJSON, encYAML, encProto, encTable, encPOM}[rng.Intn(5)]
	}
	// Namespaces.
	nss := []string{"gen-a", "nonexistent"}
	if scale.AllEncodings {
		nss = append(nss, "gen-b", "default", "kube-system")
	}
	for _, ns := range nss {
		list(ns, "plain", "", encJSON, "consistent")
	}
	// Label selectors.
	for _, i := range pick(rng, len(genLabelSelectors), scale.Labels) {
		enc := encJSON
		if scale.AllEncodings {
			enc = otherEnc()
		}
		list("", "labelSelector", "labelSelector="+url.QueryEscape(genLabelSelectors[i]), enc, "consistent")
	}
	// Field selectors: metadata's, the resource's own with values from its
	// objects, unsupported and malformed ones.
	name, ns := "gen-none", "gen-a"
	if len(objs) > 0 {
		o := objs[rng.Intn(len(objs))]
		name, ns = o.Name, o.Namespace
	}
	fields := []string{
		"metadata.name=" + name, "metadata.name!=" + name, "metadata.namespace=" + ns, "metadata.namespace!=gen-a",
		"metadata.name=" + name + ",metadata.namespace=" + ns, "metadata.name==" + name,
		"spec.bogus=1", "metadata.name", "metadata.name=a,=b", "metadata.uid=x", "metadata.labels=x",
	}
	for _, f := range genFieldLabels(r.String()) {
		val := ""
		if len(items) > 0 {
			if v, ok := getPath(items[rng.Intn(len(items))], fieldPath(f)); ok {
				val = fmt.Sprint(v)
			}
		}
		fields = append(fields, f+"="+val, f+"!="+val)
	}
	for _, i := range pick(rng, len(fields), scale.Fields) {
		list("", "fieldSelector", "fieldSelector="+url.QueryEscape(fields[i]), encJSON, "consistent")
	}
	// resourceVersion and resourceVersionMatch.
	oldest := ""
	for _, it := range items {
		m, _ := it.(map[string]interface{})
		md, _ := m["metadata"].(map[string]interface{})
		v, _ := md["resourceVersion"].(string)
		if oldest == "" || len(v) < len(oldest) || len(v) == len(oldest) && v < oldest {
			oldest = v
		}
	}
	type rvCase struct{ q, mode string }
	rvs := []rvCase{
		{"resourceVersion=0", "any"},
		{"resourceVersion=0&resourceVersionMatch=NotOlderThan", "any"},
		{"resourceVersion=" + rv + "&resourceVersionMatch=Exact", "exact"},
		{"resourceVersion=" + rv + "&resourceVersionMatch=NotOlderThan", "any"},
		{"resourceVersion=" + rv, "any"},
		{"resourceVersionMatch=Exact", "exact"},
		{"resourceVersionMatch=NotOlderThan", "exact"},
		{"resourceVersion=abc", "exact"},
		{"resourceVersion=-1", "exact"},
		{"resourceVersion=" + rv + "&resourceVersionMatch=Bogus", "exact"},
		{"resourceVersion=" + rv + "&resourceVersionMatch=Exact&limit=2", "exact"},
		{"resourceVersion=0&limit=2", "any"},
	}
	if oldest != "" {
		rvs = append(rvs, rvCase{"resourceVersion=" + oldest + "&resourceVersionMatch=Exact", "exact"})
	}
	for _, i := range pick(rng, len(rvs), scale.RVs) {
		shape := regexpDigits.ReplaceAllString(rvs[i].q, "N")
		list("", shape, rvs[i].q, encJSON, rvs[i].mode)
	}
	// Paging, walked to the end on each server with its own tokens.
	for w := 0; w < scale.PageWalks; w++ {
		limit := 1 + rng.Intn(3)
		enc := encJSON
		if w > 0 {
			enc = otherEnc()
		}
		genPages(ctx, api, herald, r, limit, enc, report)
	}
	// GETs.
	for i, o := range objs {
		if i >= scale.Gets {
			break
		}
		p := r.objectPath(o.Namespace, o.Name)
		encs := []string{encJSON, otherEnc()}
		if scale.AllEncodings {
			encs = []string{encJSON, encYAML, encProto, encTable, encPOM}
		}
		for _, enc := range encs {
			genPair(ctx, api, herald, genReq{Res: r, Kind: "get", Shape: "object", Path: p, Enc: enc, RVMode: "exact"}, report)
		}
		genPair(ctx, api, herald, genReq{Res: r, Kind: "get", Shape: "resourceVersion=0", Path: p + "?resourceVersion=0", Enc: encJSON, RVMode: "exact"}, report)
	}
	missingNS := ""
	if r.namespaced() {
		missingNS = "gen-a"
	}
	genPair(ctx, api, herald, genReq{Res: r, Kind: "get", Shape: "missing", Path: r.objectPath(missingNS, "gen-missing"), Enc: encJSON, RVMode: "exact"}, report)
	return rv
}

var regexpDigits = regexp.MustCompile(`[0-9]+`)

// pick draws up to n distinct indexes below size.
func pick(rng *rand.Rand, size, n int) []int {
	p := rng.Perm(size)
	if n < len(p) {
		p = p[:n]
	}
	return p
}

// genPages walks a paged list on both servers, page by page.
func genPages(ctx context.Context, api, herald *genClient, r apiRes, limit int, enc string, report *genReport) {
	acont, hcont := "", ""
	var afirst, hfirst uint64
	for page := 0; page < 60; page++ {
		aq := fmt.Sprintf("limit=%d", limit)
		hq := aq
		if page > 0 {
			aq += "&continue=" + url.QueryEscape(acont)
			hq += "&continue=" + url.QueryEscape(hcont)
		}
		// Every page is read at its walk's first version, on each server:
		// checked below within each server, so between them the pages
		// compare as the first ones do (Herald at or ahead).
		q := genReq{Res: r, Kind: "page", Shape: "limit&continue", Path: r.path("") + "?" + aq, Enc: enc, RVMode: "consistent"}
		accept := acceptFor(enc, true)
		a := api.do(ctx, http.MethodGet, q.Path, accept, nil)
		h := herald.do(ctx, http.MethodGet, r.path("")+"?"+hq, accept, nil)
		fs := compareAnswers(q, a, h)
		if enc == encJSON && a.code == 200 && h.code == 200 {
			arv, aerr := listRV(a.body)
			hrv, herr := listRV(h.body)
			if page == 0 {
				afirst, hfirst = arv, hrv
			} else if aerr == nil && herr == nil && (arv != afirst) != (hrv != hfirst) {
				fs = append(fs, genFinding{Class: "value", Pattern: "(paging) a page read at another version than its first", Detail: fmt.Sprintf("page %d: herald %v (first %v), apiserver %v (first %v)", page, hrv, hfirst, arv, afirst)})
			}
		}
		report.count(1)
		report.add(r.String(), q.String(), fs)
		acont, hcont = continueOf(enc, a.body), continueOf(enc, h.body)
		if acont == "" || hcont == "" || a.code != 200 || h.code != 200 {
			if a.code == 200 && h.code == 200 && (acont == "") != (hcont == "") {
				report.add(r.String(), q.String(), []genFinding{{Class: "value", Pattern: "(paging) continue present on one server only", Detail: fmt.Sprintf("page %d: herald %q, apiserver %q", page, hcont, acont)}})
			}
			return
		}
	}
}

func continueOf(enc string, body []byte) string {
	v, err := decodeAnswer(enc, body)
	if err != nil {
		return ""
	}
	m, _ := v.(map[string]interface{})
	md, _ := m["metadata"].(map[string]interface{})
	s, _ := md["continue"].(string)
	return s
}

// genWatchWrites changes the generated objects a little: a label on the
// first of each resource, the last deleted when there are two or more.
func genWatchWrites(ctx context.Context, api *genClient, listable []apiRes, byRes map[string][]genObject) {
	for _, r := range listable {
		objs := byRes[gvrString(r.GVR)]
		if len(objs) == 0 || r.GVR.Resource == "namespaces" {
			continue
		}
		o := objs[0]
		api.do(ctx, http.MethodPatch, r.objectPath(o.Namespace, o.Name), jsonType, []byte(`{"metadata":{"labels":{"gen-touched":"1"}}}`))
		if len(objs) > 1 {
			o := objs[len(objs)-1]
			api.do(ctx, http.MethodDelete, r.objectPath(o.Namespace, o.Name), jsonType, nil)
		}
	}
}

// genWatches: a watch from the version before the writes (one second),
// and watches that end at once (a too old version, a malformed one), each
// at once.
func genWatches(ctx context.Context, api, herald *genClient, r apiRes, rv string, report *genReport) {
	var wg sync.WaitGroup
	genPair := func(ctx context.Context, api, herald *genClient, q genReq, report *genReport) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			genPair(ctx, api, herald, q, report)
		}()
	}
	defer wg.Wait()
	if rv != "" {
		genPair(ctx, api, herald, genReq{Res: r, Kind: "watch", Shape: "from list rv", Path: r.path("") + "?watch=1&resourceVersion=" + rv + "&timeoutSeconds=1", Enc: encJSON, RVMode: "exact"}, report)
		genPair(ctx, api, herald, genReq{Res: r, Kind: "watch", Shape: "from list rv, labelSelector app=a, in gen-a", Path: r.path("gen-a") + "?watch=1&labelSelector=app%3Da&resourceVersion=" + rv + "&timeoutSeconds=1", Enc: encJSON, RVMode: "exact"}, report)
	}
	// A watch list: the objects as ADDED events, then (dropped) the
	// bookmark that ends them. Five seconds, not one: on the apiserver upstream
	// Herald's initial events wait for its consistent read (a bookmark from
	// the apiserver, 1-2 s), and a one-second watch often ends before them;
	// five seconds leave room on a loaded machine.
	genPair(ctx, api, herald, genReq{Res: r, Kind: "watch", Shape: "sendInitialEvents", Path: r.path("") + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5", Enc: encJSON, RVMode: "exact"}, report)
	genPair(ctx, api, herald, genReq{Res: r, Kind: "watch", Shape: "resourceVersion=1 (too old)", Path: r.path("") + "?watch=1&resourceVersion=1&timeoutSeconds=1", Enc: encJSON, RVMode: "exact"}, report)
	genPair(ctx, api, herald, genReq{Res: r, Kind: "watch", Shape: "resourceVersion=abc", Path: r.path("") + "?watch=1&resourceVersion=abc&timeoutSeconds=1", Enc: encJSON, RVMode: "exact"}, report)
}

// genFinish prints the grouped summary and fails on any unknown difference.
func genFinish(t *testing.T, report *genReport, resources, objects int, took time.Duration) {
	t.Helper()
	groups := report.sortedGroups()
	known, unknown, occurrences := 0, 0, 0
	used := map[int]bool{}
	var b strings.Builder
	class := ""
	for _, g := range groups {
		occurrences += g.Count
		if reason, i, ok := knownGenerated(g.Class, g.Pattern, g.Resources); ok {
			g.Known = reason
			used[i] = true
			known++
		} else {
			unknown++
		}
		if g.Class != class {
			class = g.Class
			n := 0
			for _, x := range groups {
				if x.Class == class {
					n++
				}
			}
			fmt.Fprintf(&b, "\n== %s: %d pattern(s)\n", class, n)
			if class == "missing-resource" {
				b.WriteString("  (listed by the apiserver's discovery, not by Herald's; no request is sent for them)\n")
			}
		}
		res := g.Resources
		more := ""
		if len(res) > 6 {
			res, more = res[:6], fmt.Sprintf(", +%d", len(g.Resources)-6)
		}
		if g.Class == "missing-resource" {
			tag := "[UNKNOWN]"
			if g.Known != "" {
				tag = "[known]"
			}
			fmt.Fprintf(&b, "  %s %s\n", tag, g.Pattern)
			continue
		}
		if g.Known != "" {
			fmt.Fprintf(&b, "  [known] %s  (%d times; %s%s)\n      why: %s\n      e.g. %s\n", g.Pattern, g.Count, strings.Join(res, " "), more, g.Known, g.Example)
		} else {
			fmt.Fprintf(&b, "  [UNKNOWN] %s  (%d times; %s%s)\n      e.g. %s\n", g.Pattern, g.Count, strings.Join(res, " "), more, g.Example)
		}
	}
	t.Logf("GENERATED summary (%d resources compared, %d objects written):%s", resources, objects, b.String())
	var stale []string
	for i, k := range knownGeneratedList {
		if !used[i] {
			stale = append(stale, fmt.Sprintf("  %s %s: %s", k.Class, k.Pattern, k.Reason))
		}
	}
	if len(stale) > 0 {
		t.Logf("known differences not seen in this run (fixed? some show only at some seeds, sizes or upstreams):\n%s", strings.Join(stale, "\n"))
	}
	line := fmt.Sprintf("GENERATED: %d requests, %d differences (%d known), %d unknown [%d occurrences; %.0f s]",
		report.requests, len(groups), known, unknown, occurrences, took.Seconds())
	t.Log(line)
	fmt.Println(line)
	if unknown > 0 {
		t.Errorf("%d difference pattern(s) between Herald and the kube-apiserver are not in generated_known_test.go (the UNKNOWN lines above)", unknown)
	}
}
