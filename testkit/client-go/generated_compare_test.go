package clientgo

// The generated differential's comparison: one request sent to the
// apiserver, then to Herald, and the two answers classified (status code,
// error Status, bytes, JSON value paths, table cells, watch events).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// genClient sends raw HTTP requests to one server with the admin token.
type genClient struct {
	name string
	base string
	http *http.Client
}

type genResp struct {
	code     int
	ctype    string
	warnings []string // the Warning headers, in order
	body     []byte
	err      error
}

func (c *genClient) do(ctx context.Context, method, path, accept string, body []byte) genResp {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return genResp{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if body != nil {
		ct := jsonType
		if method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return genResp{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return genResp{code: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), warnings: resp.Header.Values("Warning"), body: b, err: err}
}

// The encodings a request is made in.
const (
	encJSON     = "json"
	encYAML     = "yaml"
	encProto    = "protobuf"
	encTable    = "table"
	encPOM      = "pom"
	tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"
)

func acceptFor(enc string, list bool) string {
	switch enc {
	case encYAML:
		return "application/yaml"
	case encProto:
		return protoType
	case encTable:
		return tableAccept
	case encPOM:
		if list {
			return "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
		}
		return "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	}
	return jsonType
}

// genReq is one generated request.
type genReq struct {
	Res    apiRes
	Kind   string // list, get, watch, page
	Shape  string // what the request is made of: its parameters' names
	Path   string // path and query
	Enc    string
	RVMode string // consistent (no resourceVersion), any (0, NotOlderThan), exact
}

func (q genReq) String() string { return fmt.Sprintf("GET %s [%s]", q.Path, q.Enc) }

// genFinding is one difference one request showed.
type genFinding struct {
	Class, Pattern, Detail string
}

// genGroup is the findings of one class and pattern.
type genGroup struct {
	Class, Pattern string
	Count          int
	Resources      []string
	Example        string // a request and what differed
	Known          string // the known list's reason, when listed
}

// genReport collects the groups.
type genReport struct {
	mu       sync.Mutex
	requests int
	groups   map[string]*genGroup
}

func newGenReport() *genReport { return &genReport{groups: map[string]*genGroup{}} }

func (r *genReport) add(res string, req string, fs []genFinding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range fs {
		k := f.Class + "\x00" + f.Pattern
		g, ok := r.groups[k]
		if !ok {
			g = &genGroup{Class: f.Class, Pattern: f.Pattern, Example: req + "\n        " + f.Detail}
			r.groups[k] = g
		}
		g.Count++
		if res != "" && !contains(g.Resources, res) {
			g.Resources = append(g.Resources, res)
		}
	}
}

func (r *genReport) count(n int) {
	r.mu.Lock()
	r.requests += n
	r.mu.Unlock()
}

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

var topFieldRE = regexp.MustCompile(`^(\.rows\[\*\]\.object|\.items\[\*\]|\[\*\]\.object|)\.([A-Za-z]+)(.*)$`)

// pathPattern is a JSON path with its list indexes made [*], and an
// object's top-level fields other than metadata, spec and status (a
// ConfigMap's data, an Event's reason, ...) made one pattern.
func pathPattern(p string) string {
	p = indexRE.ReplaceAllString(p, "[*]")
	if m := topFieldRE.FindStringSubmatch(p); m != nil && m[1] != "" {
		switch m[2] {
		case "metadata", "spec", "status", "kind", "apiVersion":
		default:
			return m[1] + ".<top-level field>"
		}
	}
	return p
}

var durationRE = regexp.MustCompile(`^([0-9]+[smhdy]){1,2}$`)

// normaliseValue makes what legitimately differs between the two answers
// equal in both decoded values: a list's metadata.resourceVersion (and the
// one in its continue token) when the request let the servers answer at
// different versions (no resourceVersion: Herald at or ahead of the
// apiserver; 0 or NotOlderThan: either), and Table cells that are
// durations computed at different instants (Age and the like). It reports
// whether it changed anything.
func normaliseValue(q genReq, h, a interface{}) bool {
	hm, _ := h.(map[string]interface{})
	am, _ := a.(map[string]interface{})
	if hm == nil || am == nil {
		return false
	}
	changed := false
	hmd, _ := hm["metadata"].(map[string]interface{})
	amd, _ := am["metadata"].(map[string]interface{})
	if hmd != nil && amd != nil && q.RVMode != "exact" {
		hrv, herr := strconv.ParseUint(fmt.Sprint(hmd["resourceVersion"]), 10, 64)
		arv, aerr := strconv.ParseUint(fmt.Sprint(amd["resourceVersion"]), 10, 64)
		if herr == nil && aerr == nil && hrv != arv && (q.RVMode == "any" || hrv > arv) {
			hmd["resourceVersion"] = amd["resourceVersion"]
			changed = true
		}
		hc, _ := hmd["continue"].(string)
		ac, _ := amd["continue"].(string)
		if hc != "" && ac != "" && hc != ac && continueSansRV(hc) == continueSansRV(ac) && continueSansRV(hc) != "" {
			hmd["continue"] = ac
			changed = true
		}
	}
	if q.Enc == encTable {
		hrows, _ := hm["rows"].([]interface{})
		arows, _ := am["rows"].([]interface{})
		for i := 0; i < len(hrows) && i < len(arows); i++ {
			hr, _ := hrows[i].(map[string]interface{})
			ar, _ := arows[i].(map[string]interface{})
			hc, _ := hr["cells"].([]interface{})
			ac, _ := ar["cells"].([]interface{})
			for j := 0; j < len(hc) && j < len(ac); j++ {
				hs, hok := hc[j].(string)
				as, aok := ac[j].(string)
				if hok && aok && hs != as && durationRE.MatchString(hs) && durationRE.MatchString(as) {
					hc[j] = as
					changed = true
				}
			}
		}
	}
	return changed
}

// continueSansRV is a continue token's content without its resourceVersion
// (the token is base64 of {"v":..,"rv":..,"start":..}).
func continueSansRV(tok string) string {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(tok, "="))
	if err != nil {
		return ""
	}
	var m map[string]interface{}
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	delete(m, "rv")
	out, _ := json.Marshal(m)
	return string(out)
}

// encOf is the encoding of a media type (for error bodies, which come in
// the encoding asked for when the server can).
func encOf(ct string) string {
	switch mediaType(ct) {
	case "application/yaml":
		return encYAML
	case protoType:
		return encProto
	}
	return encJSON
}

// decodeStatus decodes a Status in whichever encoding it came in.
func decodeStatus(r genResp, s *apiStatus) error {
	v, err := decodeAnswer(encOf(r.ctype), r.body)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, s); err != nil {
		return err
	}
	if s.Kind == "" && encOf(r.ctype) == encProto {
		s.Kind = "Status" // protobuf carries the kind in its envelope
	}
	return nil
}

// decodeAnswer decodes an answer body into a JSON value for its encoding.
func decodeAnswer(enc string, body []byte) (interface{}, error) {
	switch enc {
	case encYAML:
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, err
		}
		return decodeJSON(j)
	case encProto:
		obj, _, err := typedCodecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			return nil, err
		}
		j, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		return decodeJSON(j)
	}
	return decodeJSON(body)
}

// compareAnswers classifies the difference between the apiserver's answer
// and Herald's to one request: their bodies, and their Warning headers
// (a deprecated version's, built-in or custom) when the codes agree.
func compareAnswers(q genReq, a, h genResp) []genFinding {
	fs := compareBodies(q, a, h)
	if a.err == nil && h.err == nil && a.code == h.code && !slices.Equal(a.warnings, h.warnings) {
		fs = append(fs, genFinding{Class: "warning", Pattern: fmt.Sprintf("%s %s %d: Warning headers", q.Kind, q.Shape, a.code),
			Detail: fmt.Sprintf("herald %q | apiserver %q", h.warnings, a.warnings)})
	}
	return fs
}

// compareBodies classifies the difference between the bodies of the
// apiserver's answer and Herald's (their codes and content types first).
func compareBodies(q genReq, a, h genResp) []genFinding {
	what := q.Kind + " " + q.Shape + " [" + q.Enc + "]"
	if a.err != nil || h.err != nil {
		if a.err != nil && h.err != nil {
			return nil
		}
		return []genFinding{{Class: "transport", Pattern: what, Detail: fmt.Sprintf("herald err %v, apiserver err %v", h.err, a.err)}}
	}
	if a.code != h.code {
		return []genFinding{{Class: "status", Pattern: fmt.Sprintf("%s: apiserver %d, herald %d", what, a.code, h.code),
			Detail: fmt.Sprintf("herald %d %.200s | apiserver %d %.200s", h.code, h.body, a.code, a.body)}}
	}
	if a.code >= 300 {
		if mediaType(a.ctype) != mediaType(h.ctype) {
			return []genFinding{{Class: "content-type", Pattern: fmt.Sprintf("%s %d: apiserver %s, herald %s", what, a.code, mediaType(a.ctype), mediaType(h.ctype)),
				Detail: fmt.Sprintf("herald %.200q | apiserver %.200q", h.body, a.body)}}
		}
		var as, hs apiStatus
		aerr := decodeStatus(a, &as)
		herr := decodeStatus(h, &hs)
		if aerr == nil && (herr != nil || hs.Kind != "Status") && as.Kind == "Status" {
			return []genFinding{{Class: "error", Pattern: fmt.Sprintf("%s %d: Herald's body is no Status", what, a.code), Detail: fmt.Sprintf("herald %.200s", h.body)}}
		}
		var fs []genFinding
		if as.Reason != hs.Reason || as.Code != hs.Code {
			fs = append(fs, genFinding{Class: "error", Pattern: fmt.Sprintf("%s %d: reason %s, herald %s", what, a.code, as.Reason, hs.Reason),
				Detail: fmt.Sprintf("herald %q | apiserver %q", hs.Message, as.Message)})
		}
		if as.Message != hs.Message {
			fs = append(fs, genFinding{Class: "error", Pattern: fmt.Sprintf("%s %d %s: message", what, a.code, as.Reason),
				Detail: fmt.Sprintf("herald %q | apiserver %q", hs.Message, as.Message)})
		}
		if fs == nil && !bytes.Equal(a.body, h.body) {
			av, _ := decodeAnswer(encOf(a.ctype), a.body)
			hv, _ := decodeAnswer(encOf(h.ctype), h.body)
			for _, d := range diffJSON(hv, av, 5) {
				fs = append(fs, genFinding{Class: "error", Pattern: fmt.Sprintf("%s %d: Status %s", what, a.code, pathPattern(d.Path)), Detail: d.String()})
			}
		}
		return fs
	}
	if mediaType(a.ctype) != mediaType(h.ctype) {
		return []genFinding{{Class: "content-type", Pattern: fmt.Sprintf("%s: apiserver %s, herald %s", what, mediaType(a.ctype), mediaType(h.ctype)), Detail: ""}}
	}
	if bytes.Equal(a.body, h.body) {
		return nil
	}
	if q.Kind == "watch" {
		return compareWatch(q, a.body, h.body)
	}
	av, aerr := decodeAnswer(q.Enc, a.body)
	hv, herr := decodeAnswer(q.Enc, h.body)
	if aerr != nil || herr != nil {
		return []genFinding{{Class: "value", Pattern: fmt.Sprintf("%s: undecodable", what), Detail: fmt.Sprintf("herald %v %.100q | apiserver %v %.100q", herr, h.body, aerr, a.body)}}
	}
	normalised := normaliseValue(q, hv, av)
	diffs := diffJSON(hv, av, 40)
	if len(diffs) == 0 {
		if normalised {
			return nil // equal but for what legitimately differs
		}
		return []genFinding{{Class: "bytes", Pattern: fmt.Sprintf("%s %s: same value, other bytes", q.Kind, q.Enc), Detail: firstByteDiff(h.body, a.body)}}
	}
	class := "value"
	if q.Enc == encTable {
		class = "table"
	}
	seen := map[string]bool{}
	var fs []genFinding
	for _, d := range diffs {
		p := pathPattern(d.Path)
		if q.Kind == "get" && strings.HasPrefix(p, ".items") {
			p = "(get)" + p
		}
		if p == ".items[*]" {
			// An item on one side only: which request matters.
			p += " in " + what
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		fs = append(fs, genFinding{Class: class, Pattern: p, Detail: what + ": " + d.String()})
	}
	return fs
}

// firstByteDiff shows the two bodies around where they first differ.
func firstByteDiff(h, a []byte) string {
	i := 0
	for i < len(h) && i < len(a) && h[i] == a[i] {
		i++
	}
	lo := max(0, i-40)
	return fmt.Sprintf("at byte %d: herald %q | apiserver %q", i, h[lo:min(len(h), i+60)], a[lo:min(len(a), i+60)])
}

// watchEvents splits a JSON watch stream into its events, BOOKMARKs
// dropped (when they come depends on timing, not on the data).
func watchEvents(body []byte) ([]interface{}, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var out []interface{}
	for {
		var ev map[string]interface{}
		if err := dec.Decode(&ev); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, err
		}
		if ev["type"] == "BOOKMARK" {
			continue
		}
		// The apiserver's own writes (its lease renewals in kube-system,
		// every 10 s) fall in a one-second watch or not by timing.
		if obj, ok := ev["object"].(map[string]interface{}); ok {
			if md, ok := obj["metadata"].(map[string]interface{}); ok && md["namespace"] == "kube-system" {
				continue
			}
		}
		out = append(out, ev)
	}
}

func compareWatch(q genReq, abody, hbody []byte) []genFinding {
	what := q.Kind + " " + q.Shape
	ae, aerr := watchEvents(abody)
	he, herr := watchEvents(hbody)
	if aerr != nil || herr != nil {
		return []genFinding{{Class: "watch", Pattern: what + ": undecodable stream", Detail: fmt.Sprintf("herald %v, apiserver %v", herr, aerr)}}
	}
	types := func(evs []interface{}) string {
		var s []string
		for _, e := range evs {
			s = append(s, fmt.Sprint(e.(map[string]interface{})["type"]))
		}
		return strings.Join(s, ",")
	}
	if len(ae) != len(he) {
		return []genFinding{{Class: "watch", Pattern: what + ": event count",
			Detail: fmt.Sprintf("herald %d [%s], apiserver %d [%s]", len(he), types(he), len(ae), types(ae))}}
	}
	var fs []genFinding
	seen := map[string]bool{}
	for _, d := range diffJSON(he, ae, 20) {
		p := pathPattern(d.Path)
		if !seen[p] {
			seen[p] = true
			fs = append(fs, genFinding{Class: "watch", Pattern: what + ": events" + p, Detail: d.String()})
		}
	}
	if fs == nil {
		// The same events in other bytes (bookmarks aside).
		var ab, hb bytes.Buffer
		for _, e := range ae {
			b, _ := json.Marshal(e)
			ab.Write(b)
		}
		for _, e := range he {
			b, _ := json.Marshal(e)
			hb.Write(b)
		}
		if !bytes.Equal(stripBookmarks(abody), stripBookmarks(hbody)) {
			fs = append(fs, genFinding{Class: "bytes", Pattern: "watch json: same events, other bytes", Detail: firstByteDiff(stripBookmarks(hbody), stripBookmarks(abody))})
		}
	}
	return fs
}

func stripBookmarks(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(`{"type":"BOOKMARK"`)) || len(l) == 0 {
			continue
		}
		// As watchEvents: the apiserver's own writes in kube-system come
		// or not by timing (a watch-list of leases holds its own lease at
		// whichever renewal each server listed).
		var ev struct {
			Object struct {
				Metadata struct {
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if json.Unmarshal(l, &ev) == nil && ev.Object.Metadata.Namespace == "kube-system" {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

// sortedGroups are the report's groups, by class then count.
func (r *genReport) sortedGroups() []*genGroup {
	var gs []*genGroup
	for _, g := range r.groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].Class != gs[j].Class {
			return gs[i].Class < gs[j].Class
		}
		if gs[i].Count != gs[j].Count {
			return gs[i].Count > gs[j].Count
		}
		return gs[i].Pattern < gs[j].Pattern
	})
	return gs
}
