package main

// What only requests tell: a deprecated version's Warning, a list's Table
// columns, the field labels a list's field selector accepts.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// labelDepth bounds the field-label candidates: every label a
// k8s.io/kubernetes v1.37.2 field-label conversion names has at most three
// segments (spec.template.x is none; involvedObject.resourceVersion,
// spec.nodeName, status.podIP are), four leaves a margin.
const labelDepth = 4

// probeWorkers is how many requests are in flight at once.
const probeWorkers = 16

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "servedgen: "+format+"\n", args...)
}

// schemaDoc is kube/schema/gen's output, as far as candidates need it.
type schemaDoc struct {
	Release string            `json:"release"`
	Kinds   map[string]string `json:"kinds"`
	Types   map[string]struct {
		Fields []struct {
			JSON   string     `json:"json"`
			Inline bool       `json:"inline"`
			Shape  schemaType `json:"shape"`
		} `json:"fields"`
	} `json:"types"`
}

type schemaType struct {
	Kind string      `json:"kind"`
	Type string      `json:"type"`
	Elem *schemaType `json:"elem"`
}

func loadSchema(path string) (*schemaDoc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the kinds' schema: %w", err)
	}
	var s schemaDoc
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// kube/schema/gen names the k8s.io/api module's version, v0.x for v1.x.
	if s.Release != "v0"+strings.TrimPrefix(release, "v1") {
		return nil, fmt.Errorf("%s is of release %q, not %s", path, s.Release, release)
	}
	return &s, nil
}

const objectMeta = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"

// candidates are the dotted JSON paths of a kind, and their prefixes, up
// to labelDepth segments: through pointers and slices' elements, not
// into maps. A kind the schema lacks (none in v1.37.2) would get
// its metadata's paths and spec and status.
func (s *schemaDoc) candidates(group, version, kind string) []string {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	out := map[string]bool{}
	var walk func(t, prefix string, depth int, stack map[string]bool)
	walk = func(t, prefix string, depth int, stack map[string]bool) {
		for _, f := range s.Types[t].Fields {
			sh := f.Shape
			for (sh.Kind == "ptr" || sh.Kind == "slice") && sh.Elem != nil {
				sh = *sh.Elem
			}
			if f.Inline {
				if sh.Kind == "message" {
					walk(sh.Type, prefix, depth, stack)
				}
				continue
			}
			p := prefix + f.JSON
			out[p] = true
			if sh.Kind == "message" && depth > 1 && !stack[sh.Type] {
				stack[sh.Type] = true
				walk(sh.Type, p+".", depth-1, stack)
				delete(stack, sh.Type)
			}
		}
	}
	if t, ok := s.Kinds[gv+"/"+kind]; ok {
		walk(t, "", labelDepth, map[string]bool{t: true})
	} else {
		logf("%s/%s is not in the kinds' schema: its metadata's paths, spec and status are its candidates", gv, kind)
		out["metadata"], out["spec"], out["status"] = true, true, true
		walk(objectMeta, "metadata.", labelDepth-1, map[string]bool{objectMeta: true})
	}
	var list []string
	for p := range out {
		list = append(list, p)
	}
	sort.Strings(list)
	return list
}

// pool runs jobs on probeWorkers goroutines and returns the first error.
func pool(ctx context.Context, jobs []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan func(context.Context) error)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := 0; i < probeWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range ch {
				if err := job(ctx); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for _, job := range jobs {
		if ctx.Err() != nil {
			break
		}
		ch <- job
	}
	close(ch)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// probe fills Deprecation, Columns and FieldLabels.
func probe(ctx context.Context, c *cluster, s *schemaDoc, rs []Resource) error {
	// Per resource: its warning and its columns.
	var jobs []func(context.Context) error
	for i := range rs {
		r := &rs[i]
		jobs = append(jobs, func(ctx context.Context) error { return deprecation(ctx, c, r) })
		if r.listable() {
			jobs = append(jobs, func(ctx context.Context) error { return columns(ctx, c, r) })
		}
	}
	if err := pool(ctx, jobs); err != nil {
		return err
	}

	// Field labels: each kind's paths and the labels the sources name
	// (sources.go) first, then every label accepted anywhere on every
	// listable resource.
	var mu sync.Mutex
	accepted := make([]map[string]bool, len(rs))
	tried := make([]map[string]bool, len(rs))
	try := func(labels func(i int) []string) error {
		jobs = jobs[:0]
		n := 0
		for i := range rs {
			if !rs[i].listable() {
				continue
			}
			if accepted[i] == nil {
				accepted[i], tried[i] = map[string]bool{}, map[string]bool{}
			}
			for _, l := range labels(i) {
				if tried[i][l] {
					continue
				}
				tried[i][l] = true
				n++
				jobs = append(jobs, func(ctx context.Context) error {
					ok, err := fieldLabel(ctx, c, &rs[i], l)
					if ok {
						mu.Lock()
						accepted[i][l] = true
						mu.Unlock()
					}
					return err
				})
			}
		}
		logf("trying %d field labels", n)
		return pool(ctx, jobs)
	}
	named, err := sourceLabels()
	if err != nil {
		return err
	}
	if err := try(func(i int) []string {
		return append(s.candidates(rs[i].Group, rs[i].Version, rs[i].Kind), named...)
	}); err != nil {
		return err
	}
	all := map[string]bool{}
	for _, a := range accepted {
		for l := range a {
			all[l] = true
		}
	}
	var union []string
	for l := range all {
		union = append(union, l)
	}
	if err := try(func(int) []string { return union }); err != nil {
		return err
	}
	for i := range rs {
		for l := range accepted[i] {
			rs[i].FieldLabels = append(rs[i].FieldLabels, l)
		}
		sort.Strings(rs[i].FieldLabels)
		if rs[i].listable() && len(rs[i].FieldLabels) == 0 {
			return fmt.Errorf("%s accepts no field label: not even metadata.name?", rs[i].String())
		}
	}
	return nil
}

// deprecation reads the Warning header of a request to the resource: a
// list, a get of a name that does not exist, or a create with a media type
// no handler decodes (answered 415, nothing created). The deprecation
// warning is added before the verb's handler runs
// (k8s.io/apiserver/pkg/endpoints/warning.AddWarningsHandler), so any
// answer carries it.
func deprecation(ctx context.Context, c *cluster, r *Resource) error {
	var (
		method = http.MethodGet
		path   = r.collectionPath() + "?limit=1"
		header = http.Header{"Accept": {"application/json"}}
		body   []byte
		want   = http.StatusOK
	)
	switch {
	case r.listable():
	case has(r.Verbs, "get"):
		path, want = r.objectsPath()+"/servedgen-absent", http.StatusNotFound
	case has(r.Verbs, "create"):
		method, want = http.MethodPost, http.StatusUnsupportedMediaType
		path = r.objectsPath()
		header.Set("Content-Type", "application/x-servedgen")
		body = []byte("{}")
	default:
		return fmt.Errorf("%s: no list, get or create verb to read its warnings with", r.String())
	}
	resp, b, err := c.do(ctx, method, path, header, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d (not %d) %s", method, path, resp.StatusCode, want, b)
	}
	warnings, errs := utilnet.ParseWarningHeaders(resp.Header.Values("Warning"))
	if len(errs) > 0 {
		return fmt.Errorf("%s %s: Warning headers %q: %v", method, path, resp.Header.Values("Warning"), errs)
	}
	var texts []string
	for _, w := range warnings {
		if w.Code != 299 {
			return fmt.Errorf("%s %s: a Warning of code %d: %q", method, path, w.Code, w.Text)
		}
		texts = append(texts, w.Text)
	}
	if len(texts) > 1 {
		return fmt.Errorf("%s %s: more than one warning: %q", method, path, texts)
	}
	if len(texts) == 1 {
		r.Deprecation = texts[0]
	}
	return nil
}

// columns reads the columnDefinitions of the resource's Table list.
func columns(ctx context.Context, c *cluster, r *Resource) error {
	path := r.collectionPath() + "?limit=1"
	resp, b, err := c.do(ctx, http.MethodGet, path, http.Header{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}}, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s as a Table: %d %s", path, resp.StatusCode, b)
	}
	var t metav1.Table
	if err := json.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("GET %s as a Table: %w", path, err)
	}
	if t.Kind != "Table" || len(t.ColumnDefinitions) == 0 {
		return fmt.Errorf("GET %s as a Table: kind %q, %d columns", path, t.Kind, len(t.ColumnDefinitions))
	}
	for _, d := range t.ColumnDefinitions {
		r.Columns = append(r.Columns, Column{d.Name, d.Type, d.Format, d.Description, d.Priority})
	}
	return nil
}

// fieldLabel tells whether a list of the resource accepts a field selector
// on label: 200, or a 400 from the list handler's field selector
// conversion (runtime.Scheme.ConvertFieldLabel) refusing it. The kinds'
// conversions word it as "field label not supported: L", "field label "L"
// not supported for Kind" or "field label not supported for G/V, Kind=K:
// L", the default one (metav1's DefaultMetaV1FieldSelectorConversion, for
// a kind without its own) as ""L" is not a known field selector"; any
// other answer is an error.
func fieldLabel(ctx context.Context, c *cluster, r *Resource, label string) (bool, error) {
	path := r.collectionPath() + "?limit=1&fieldSelector=" + url.QueryEscape(label+"=x")
	resp, b, err := c.do(ctx, http.MethodGet, path, http.Header{"Accept": {"application/json"}}, nil)
	if err != nil {
		return false, err
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return true, nil
	case resp.StatusCode == http.StatusBadRequest && refusal(b, label):
		return false, nil
	}
	return false, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
}

// refusal tells whether a 400's Status is the field selector conversion's
// refusal of label.
func refusal(body []byte, label string) bool {
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Reason != metav1.StatusReasonBadRequest {
		return false
	}
	m := st.Message
	return strings.Contains(m, label) &&
		(strings.Contains(m, "field label") && strings.Contains(m, "not supported") ||
			strings.Contains(m, "is not a known field selector"))
}
