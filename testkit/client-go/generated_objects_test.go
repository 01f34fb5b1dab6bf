package clientgo

// The generated differential's objects: for every resource the apiserver
// lets us create, typed Go objects filled by randfill (what Kubernetes' own
// API fuzzers use) over a valid base (the corpus's object of the kind when
// there is one), written through the apiserver as JSON; a 422's
// details.causes[].field are reset to the base's value (or dropped) and the
// object is written again, a bounded number of times.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"
)

// The namespaces the generated objects live in. Quotas and limit ranges
// go to a namespace of their own (a random quota or limit would refuse
// the other writes).
var genNamespaces = []string{"gen-a", "gen-b"}

const genLimitsNS = "gen-limits"

// genNever is a label selector nothing carries: admission webhooks and
// policies the generator writes are pointed at it, so they never act on
// the test's own writes.
var genNever = map[string]interface{}{"matchLabels": map[string]interface{}{"gen.herald.dev/never": "match"}}

// genSkipCreate are resources never written with random content: they
// would change the cluster under the test (an APIService takes over a
// group version, flow control throttles the test's own requests, a CRD
// adds resources), or they are not stored objects.
var genSkipCreate = map[string]string{
	"apiregistration.k8s.io/apiservices":                       "an APIService would take over a group version",
	"apiextensions.k8s.io/customresourcedefinitions":           "the test writes its own CRD",
	"flowcontrol.apiserver.k8s.io/flowschemas":                 "a flow schema could throttle the test's requests",
	"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations": "a priority level could throttle the test's requests",
	"/bindings":          "not a stored object",
	"/componentstatuses": "not a stored object",
	"internal.apiserver.k8s.io/storageversions":                    "the apiserver's own bookkeeping",
	"storagemigration.k8s.io/storageversionmigrations":             "would migrate storage under the test",
	"coordination.k8s.io/leasecandidates":                          "the apiserver's own bookkeeping",
	"admissionregistration.k8s.io/mutatingadmissionpolicies":       "a mutating policy could rewrite the test's writes",
	"admissionregistration.k8s.io/mutatingadmissionpolicybindings": "a mutating policy could rewrite the test's writes",
}

// genVocabulary are the strings randfill puts in every string field: valid
// as names, label values, images, hosts, most enums' shape, so that more of
// them survive validation than random unicode would.
var genVocabulary = []string{"a", "b", "gen-x", "x1", "web", "10", "TCP", "http", "default", "Always", "None", "true", "app", "nginx:1.27", "example.com", "10.0.0.1", "/tmp", "v1"}

// genQuantities are what resource.Quantity fields get.
var genQuantities = []string{"1", "100m", "1Gi", "2", "500Mi", "0"}

// genObjectStats counts, per kind, what the generator wrote.
type genObjectStats struct {
	Kind                     string
	Tried, Written, Attempts int
	Generated, Survived      int // leaf fields generated, leaf fields in the stored objects
	LastError                string
}

// genObject is one object written: its resource, namespace and name.
type genObject struct {
	Res       schema.GroupVersionResource
	Namespace string
	Name      string
}

// genBases reads the corpus's objects (../corpus/*.yaml), the first of each
// apiVersion/kind: a valid base the random fields are laid over and reset to.
func genBases(t *testing.T) map[string]map[string]interface{} {
	t.Helper()
	dir := os.Getenv("HERALD_CORPUS_DIR")
	if dir == "" {
		dir = "../corpus"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	out := map[string]map[string]interface{}{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("corpus %s: %v", f, err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			var m map[string]interface{}
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
				continue
			}
			if items, ok := m["items"].([]interface{}); ok && m["kind"] == "List" {
				for _, it := range items {
					if im, ok := it.(map[string]interface{}); ok {
						addBase(out, im)
					}
				}
				continue
			}
			addBase(out, m)
		}
	}
	for k, j := range genExtraBases {
		if _, ok := out[k]; ok {
			continue
		}
		var m map[string]interface{}
		if err := json.Unmarshal([]byte(j), &m); err != nil {
			t.Fatalf("genExtraBases[%s]: %v", k, err)
		}
		out[k] = m
	}
	return out
}

// genExtraBases are minimal valid objects of kinds the corpus lacks whose
// required fields random values rarely satisfy (merged under the corpus's).
var genExtraBases = map[string]string{
	"/PodTemplate":                                                  `{"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}`,
	"/ReplicationController":                                        `{"spec":{"replicas":1,"selector":{"app":"a"},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	"autoscaling/HorizontalPodAutoscaler":                           `{"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":3}}`,
	"networking.k8s.io/IngressClass":                                `{"spec":{"controller":"example.com/ingress"}}`,
	"networking.k8s.io/ServiceCIDR":                                 `{"spec":{"cidrs":["10.200.0.0/24"]}}`,
	"networking.k8s.io/IPAddress":                                   `{"spec":{"parentRef":{"resource":"services","namespace":"default","name":"kubernetes"}}}`,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy":        `{"spec":{"failurePolicy":"Ignore","matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},"validations":[{"expression":"true"}]}}`,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": `{"spec":{"policyName":"gen-validatingadmissionpolicy-0","validationActions":["Audit"]}}`,
	"events.k8s.io/Event":                                           `{"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"gen.herald.dev/gen","reportingInstance":"gen-1","action":"Create","reason":"Generated","type":"Normal","regarding":{"kind":"Pod","namespace":"gen-a","name":"x"}}`,
	"resource.k8s.io/ResourceSlice":                                 `{"spec":{"driver":"gen.herald.dev","pool":{"name":"p","generation":1,"resourceSliceCount":1},"allNodes":true}}`,
	"resource.k8s.io/DeviceTaintRule":                               `{"spec":{"taint":{"key":"gen.herald.dev/t","value":"v","effect":"NoSchedule"}}}`,
	"storage.k8s.io/VolumeAttachment":                               `{"spec":{"attacher":"gen.herald.dev","nodeName":"node-1","source":{"persistentVolumeName":"pv-1"}}}`,
	"storage.k8s.io/CSIStorageCapacity":                             `{"storageClassName":"standard"}`,
	"storage.k8s.io/VolumeAttributesClass":                          `{"driverName":"gen.herald.dev"}`,
}

func addBase(out map[string]map[string]interface{}, m map[string]interface{}) {
	av, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	gv, err := schema.ParseGroupVersion(av)
	if err != nil || kind == "" {
		return
	}
	k := gv.Group + "/" + kind // any version: the fields mostly match
	if _, ok := out[k]; !ok {
		delete(m, "status")
		out[k] = m
	}
}

// genFiller is randfill with the test's custom functions.
func genFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.25).NumElements(1, 2).MaxDepth(10).Funcs(
		func(s *string, c randfill.Continue) { *s = genVocabulary[c.Intn(len(genVocabulary))] },
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(genQuantities[c.Intn(len(genQuantities))])
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":%q}}`, genVocabulary[c.Intn(len(genVocabulary))]))
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {}, // the test writes its own
		func(b *[]byte, c randfill.Continue) {
			*b = []byte(genVocabulary[c.Intn(len(genVocabulary))])
		},
		func(i *int32, c randfill.Continue) { *i = int32(c.Intn(5)) },
		func(i *int64, c randfill.Continue) { *i = int64(c.Intn(100)) },
		func(i *int, c randfill.Continue) { *i = c.Intn(5) },
	)
}

// kindSeed derives a kind's own seed from the run's, so each kind's objects
// are the same for a seed whatever order the kinds are written in.
func kindSeed(seed int64, gvk schema.GroupVersionKind, i int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", gvk.String(), i)
	return seed ^ int64(h.Sum64()&0x7fffffffffffffff)
}

// genRandomTyped fills the kind's Go type (client-go's scheme) and returns
// it as JSON; false when the scheme does not know the kind.
func genRandomTyped(gvk schema.GroupVersionKind, seed int64) (map[string]interface{}, bool) {
	obj, err := typedScheme.New(gvk)
	if err != nil {
		return nil, false
	}
	func() {
		defer func() { recover() }() // randfill cannot fill some shapes; what it filled stays
		genFiller(seed).Fill(obj)
	}()
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	var m map[string]interface{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false
	}
	return m, true
}

// genFromSchema fills a custom resource from its CRD's schema.
func genFromSchema(s *apiextensionsv1.JSONSchemaProps, rng *rand.Rand, depth int) interface{} {
	if s == nil {
		return nil
	}
	if len(s.Enum) > 0 {
		var v interface{}
		_ = json.Unmarshal(s.Enum[rng.Intn(len(s.Enum))].Raw, &v)
		return v
	}
	switch s.Type {
	case "object":
		m := map[string]interface{}{}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name) // sorted: the seed draws the same values
		}
		sort.Strings(names)
		for _, name := range names {
			p := s.Properties[name]
			if name == "metadata" || name == "apiVersion" || name == "kind" {
				continue
			}
			if depth == 0 || rng.Float64() < 0.85 {
				m[name] = genFromSchema(&p, rng, depth+1)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for i := 0; i < 1+rng.Intn(2); i++ {
				m[genVocabulary[rng.Intn(len(genVocabulary))]] = genFromSchema(s.AdditionalProperties.Schema, rng, depth+1)
			}
		}
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && depth < 4 {
			m["free"] = map[string]interface{}{"n": rng.Intn(10), "s": genVocabulary[rng.Intn(len(genVocabulary))], "l": []interface{}{true, 1.5}}
		}
		return m
	case "array":
		var l []interface{}
		for i := 0; i < rng.Intn(3); i++ {
			l = append(l, genFromSchema(s.Items.Schema, rng, depth+1))
		}
		if l == nil {
			l = []interface{}{}
		}
		return l
	case "integer":
		lo, hi := int64(0), int64(1000)
		if s.Minimum != nil {
			lo = int64(*s.Minimum)
		}
		if s.Maximum != nil {
			hi = int64(*s.Maximum)
		}
		return lo + rng.Int63n(hi-lo+1)
	case "number":
		return float64(rng.Intn(1000)) / 8
	case "boolean":
		return rng.Intn(2) == 0
	case "string":
		if s.Format == "date-time" {
			return "2026-01-02T03:04:05Z"
		}
		return genVocabulary[rng.Intn(len(genVocabulary))]
	}
	return genVocabulary[rng.Intn(len(genVocabulary))]
}

// overlay lays the random value over the base: maps merged key by key, any
// other random value replacing the base's.
func overlay(base, random interface{}) interface{} {
	bm, bok := base.(map[string]interface{})
	rm, rok := random.(map[string]interface{})
	if bok && rok {
		out := map[string]interface{}{}
		for k, v := range bm {
			out[k] = deepCopyJSON(v)
		}
		for k, v := range rm {
			out[k] = overlay(out[k], v)
		}
		return out
	}
	if random == nil {
		return deepCopyJSON(base)
	}
	return deepCopyJSON(random)
}

func deepCopyJSON(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = deepCopyJSON(e)
		}
		return out
	}
	return v
}

// genMeta writes the object's metadata: its name, namespace, labels the
// selectors are drawn against, an annotation; nothing the apiserver sets
// (uid, resourceVersion, managedFields, ...), no owners that cannot resolve.
func genMeta(obj map[string]interface{}, gvk schema.GroupVersionKind, name, ns string, rng *rand.Rand) {
	obj["apiVersion"] = gvk.GroupVersion().String()
	obj["kind"] = gvk.Kind
	md := map[string]interface{}{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	labels := map[string]interface{}{"gen": "1", "app": []string{"a", "b", "c"}[rng.Intn(3)]}
	if rng.Intn(2) == 0 {
		labels["tier"] = []string{"x", "y"}[rng.Intn(2)]
	}
	if rng.Intn(3) == 0 {
		labels["gen.herald.dev/zone"] = []string{"north", "south", "x1", "10"}[rng.Intn(4)]
	}
	md["labels"] = labels
	md["annotations"] = map[string]interface{}{"gen.herald.dev/note": genVocabulary[rng.Intn(len(genVocabulary))]}
	obj["metadata"] = md
}

// genSafety keeps a random object from acting on the cluster: webhooks and
// admission policies never match the test's objects and fail open.
func genSafety(obj map[string]interface{}, gvk schema.GroupVersionKind) {
	switch gvk.Kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		hooks, _ := obj["webhooks"].([]interface{})
		for _, h := range hooks {
			if hm, ok := h.(map[string]interface{}); ok {
				hm["objectSelector"] = deepCopyJSON(genNever)
				hm["failurePolicy"] = "Ignore"
			}
		}
	case "ValidatingAdmissionPolicy":
		spec, _ := obj["spec"].(map[string]interface{})
		if spec != nil {
			spec["failurePolicy"] = "Ignore"
			mc, _ := spec["matchConstraints"].(map[string]interface{})
			if mc == nil {
				mc = map[string]interface{}{}
				spec["matchConstraints"] = mc
			}
			mc["objectSelector"] = deepCopyJSON(genNever)
		}
	case "ValidatingAdmissionPolicyBinding":
		spec, _ := obj["spec"].(map[string]interface{})
		if spec != nil {
			mr, _ := spec["matchResources"].(map[string]interface{})
			if mr == nil {
				mr = map[string]interface{}{}
				spec["matchResources"] = mr
			}
			mr["objectSelector"] = deepCopyJSON(genNever)
		}
	case "Pod":
		// The service account admission plugin requires the account to
		// exist: the test writes "default" in its namespaces.
		if spec, ok := obj["spec"].(map[string]interface{}); ok {
			spec["serviceAccountName"] = "default"
			delete(spec, "serviceAccount")
		}
	}
}

// fieldPath splits a validation cause's field ("spec.containers[0].image",
// "data[k.y]", "metadata.labels") into steps: map keys and list indexes.
func fieldPath(f string) []interface{} {
	var out []interface{}
	i := 0
	for i < len(f) {
		switch f[i] {
		case '.':
			i++
		case '[':
			j := strings.IndexByte(f[i:], ']')
			if j < 0 {
				return out
			}
			key := f[i+1 : i+j]
			if n, err := strconv.Atoi(key); err == nil {
				out = append(out, n)
			} else {
				out = append(out, strings.Trim(key, `"'`))
			}
			i += j + 1
		default:
			j := i
			for j < len(f) && f[j] != '.' && f[j] != '[' {
				j++
			}
			out = append(out, f[i:j])
			i = j
		}
	}
	return out
}

func getPath(v interface{}, p []interface{}) (interface{}, bool) {
	for _, s := range p {
		switch k := s.(type) {
		case string:
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]interface{})
			if !ok || k >= len(l) {
				return nil, false
			}
			v = l[k]
		}
	}
	return v, true
}

// setPath sets (or, with del, removes) the value at p, creating maps on the
// way when setting; it reports whether anything changed.
func setPath(root map[string]interface{}, p []interface{}, val interface{}, del bool) bool {
	if len(p) == 0 {
		return false
	}
	var parent interface{} = root
	for _, s := range p[:len(p)-1] {
		next, ok := getPath(parent, []interface{}{s})
		if !ok {
			if del {
				return false
			}
			k, isKey := s.(string)
			m, isMap := parent.(map[string]interface{})
			if !isKey || !isMap {
				return false
			}
			next = map[string]interface{}{}
			m[k] = next
		}
		parent = next
	}
	switch k := p[len(p)-1].(type) {
	case string:
		m, ok := parent.(map[string]interface{})
		if !ok {
			return false
		}
		old, had := m[k]
		if del {
			delete(m, k)
			return had
		}
		m[k] = deepCopyJSON(val)
		return !had || !jsonEqual(old, val)
	case int:
		l, ok := parent.([]interface{})
		if !ok || k >= len(l) {
			return false
		}
		if del {
			// Drop the element: the parent list is rewritten in place
			// through its own parent.
			nl := append(append([]interface{}{}, l[:k]...), l[k+1:]...)
			return setPath(root, p[:len(p)-1], nl, false)
		}
		changed := !jsonEqual(l[k], val)
		l[k] = deepCopyJSON(val)
		return changed
	}
	return false
}

func jsonEqual(a, b interface{}) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// resetField resets a refused field to the base's value, or drops it;
// when neither changes the object (a field that names no value, a required
// one missing) it climbs to the field's parent. It returns the path it
// changed ("" for none).
func resetField(obj, base map[string]interface{}, field string) string {
	p := fieldPath(field)
	for len(p) > 0 {
		if p[0] == "metadata" || p[0] == "apiVersion" || p[0] == "kind" {
			// The test's own metadata is valid; a refused metadata
			// field is one randfill could not reach.
			return ""
		}
		if bv, ok := getPath(base, p); ok {
			if setPath(obj, p, bv, false) {
				return pathString(p)
			}
		} else if setPath(obj, p, nil, true) {
			return pathString(p)
		}
		p = p[:len(p)-1]
	}
	return ""
}

func pathString(p []interface{}) string {
	var b strings.Builder
	for _, s := range p {
		switch k := s.(type) {
		case string:
			b.WriteString("." + k)
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		}
	}
	return b.String()
}

// countLeaves counts the leaf values of a JSON value (metadata excluded).
func countLeaves(v interface{}) int {
	switch x := v.(type) {
	case map[string]interface{}:
		n := 0
		for k, e := range x {
			if k == "metadata" || k == "apiVersion" || k == "kind" {
				continue
			}
			n += countLeaves(e)
		}
		return n
	case []interface{}:
		n := 0
		for _, e := range x {
			n += countLeaves(e)
		}
		return n
	}
	return 1
}

// apiStatus is a Status body's parts the test reads.
type apiStatus struct {
	Kind    string `json:"kind"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Details struct {
		Causes []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
			Reason  string `json:"reason"`
		} `json:"causes"`
	} `json:"details"`
}

// genWrite creates one object through the apiserver, resetting what a 422
// refuses, at most attempts times. It returns the stored object.
func genWrite(ctx context.Context, api *genClient, r apiRes, ns string, obj, base map[string]interface{}, attempts int, st *genObjectStats) (map[string]interface{}, error) {
	var last string
	usedBase := false
	for a := 0; a < attempts; a++ {
		st.Attempts++
		body, _ := json.Marshal(obj)
		resp := api.do(ctx, http.MethodPost, r.path(ns), jsonType, body)
		if resp.err != nil {
			return nil, resp.err
		}
		if resp.code == http.StatusCreated || resp.code == http.StatusOK {
			var out map[string]interface{}
			if err := json.Unmarshal(resp.body, &out); err != nil {
				return nil, err
			}
			return out, nil
		}
		var s apiStatus
		_ = json.Unmarshal(resp.body, &s)
		last = fmt.Sprintf("%d %s: %.300s", resp.code, s.Reason, s.Message)
		if dbg := os.Getenv("HERALD_GEN_DEBUG"); dbg != "" && strings.Contains(r.String(), dbg) {
			fmt.Printf("GENDEBUG %s attempt %d: %d %s %s\n", r, a, resp.code, s.Reason, s.Message)
		}
		changed := false
		switch resp.code {
		case http.StatusUnprocessableEntity:
			// The causes' own fields first, the later list elements
			// before the earlier (a dropped element shifts the next);
			// when none of them changes anything, the first one's
			// parents.
			var fields []string
			for _, c := range s.Details.Causes {
				if c.Field != "" {
					fields = append(fields, c.Field)
				}
			}
			sort.Sort(sort.Reverse(sort.StringSlice(fields)))
			var done []string // what this round changed: a field under it is left for the next
			for _, f := range fields {
				fp := pathString(fieldPath(f))
				skip := false
				for _, d := range done {
					if fp == d || strings.HasPrefix(fp, d+".") || strings.HasPrefix(fp, d+"[") {
						skip = true
					}
				}
				if skip {
					continue
				}
				if p := resetField(obj, base, f); p != "" {
					done = append(done, p)
					changed = true
				}
			}
		case http.StatusConflict: // AlreadyExists: another name
			md := obj["metadata"].(map[string]interface{})
			md["name"] = fmt.Sprintf("%s-%d", md["name"], a)
			changed = true
		case http.StatusForbidden:
			// Admission plugins' refusals name no field: the ones the
			// generator meets, by their words.
			for word, field := range genForbiddenFields {
				if strings.Contains(s.Message, word) && setPath(obj, fieldPath(field), nil, true) {
					changed = true
				}
			}
		case http.StatusBadRequest, http.StatusNotFound:
			// A body the decoder refused, an admission plugin's refusal, a
			// reference to nothing: no field to reset; the base alone next.
		default:
			return nil, fmt.Errorf("%s", last)
		}
		if !changed {
			if usedBase || base == nil {
				break
			}
			md := obj["metadata"]
			for k := range obj {
				delete(obj, k)
			}
			for k, v := range base {
				obj[k] = deepCopyJSON(v)
			}
			obj["metadata"] = md
			usedBase = true
		}
	}
	return nil, fmt.Errorf("%s", last)
}

// genForbiddenFields are the fields behind admission plugins' 403s (a
// word of the message, the field dropped).
var genForbiddenFields = map[string]string{
	"integer value of priority":        "spec.priority",
	"no PriorityClass with name":       "spec.priorityClassName",
	"already marked as default":        "globalDefault",
	"error looking up service account": "spec.serviceAccountName",
	"runtimeclass":                     "spec.runtimeClassName",
	"RuntimeClass":                     "spec.runtimeClassName",
}

// genWriteAll writes perKind objects of every resource whose discovery
// lists the create verb (the preferred version of each group/resource),
// and custom resources of the test's CRD in each of its versions.
func genWriteAll(ctx context.Context, t *testing.T, api *genClient, creatable []apiRes, crd *apiextensionsv1.CustomResourceDefinition, seed int64, perKind int) ([]genObject, []*genObjectStats) {
	t.Helper()
	bases := genBases(t)
	var mu sync.Mutex
	var objects []genObject
	stats := make([]*genObjectStats, len(creatable))
	runParallel(len(creatable), 6, func(ri int) {
		r := creatable[ri]
		gvk := r.GVR.GroupVersion().WithKind(r.API.Kind)
		st := &genObjectStats{Kind: r.String()}
		stats[ri] = st
		if why, ok := genSkipCreate[r.GVR.Group+"/"+r.GVR.Resource]; ok {
			st.LastError = "not written: " + why
			return
		}
		base := bases[gvk.Group+"/"+gvk.Kind]
		for i := 0; i < perKind; i++ {
			st.Tried++
			s := kindSeed(seed, gvk, i)
			rng := rand.New(rand.NewSource(s))
			var random map[string]interface{}
			if crd != nil && r.GVR.Group == crd.Spec.Group {
				for _, v := range crd.Spec.Versions {
					if v.Name == r.GVR.Version {
						random, _ = genFromSchema(v.Schema.OpenAPIV3Schema, rng, 0).(map[string]interface{})
					}
				}
			} else {
				var ok bool
				random, ok = genRandomTyped(gvk, s)
				if !ok {
					st.LastError = "not in client-go's scheme"
					return
				}
			}
			obj, _ := overlay(base, random).(map[string]interface{})
			if obj == nil {
				obj = map[string]interface{}{}
			}
			ns := ""
			if r.namespaced() {
				ns = genNamespaces[i%len(genNamespaces)]
				if gvk.Kind == "ResourceQuota" || gvk.Kind == "LimitRange" {
					ns = genLimitsNS
				}
			}
			name := fmt.Sprintf("gen-%s-%d", strings.ToLower(r.API.SingularName), i)
			if r.API.SingularName == "" {
				name = fmt.Sprintf("gen-%s-%d", strings.ToLower(gvk.Kind), i)
			}
			if r.GVR.Group == "herald.dev" || (crd != nil && r.GVR.Group == crd.Spec.Group) {
				name = fmt.Sprintf("gen-%s-%s-%d", strings.ToLower(gvk.Kind), r.GVR.Version, i)
			}
			if gvk.Kind == "IPAddress" { // its name is the address
				name = fmt.Sprintf("10.96.200.%d", 10+i)
			}
			genMeta(obj, gvk, name, ns, rng)
			genSafety(obj, gvk)
			if base != nil {
				base = overlay(base, nil).(map[string]interface{})
				genSafety(base, gvk)
			}
			st.Generated += countLeaves(obj)
			stored, err := genWrite(ctx, api, r, ns, obj, base, 14, st)
			if err != nil {
				st.LastError = err.Error()
				continue
			}
			st.Written++
			st.Survived += countLeaves(stored)
			md, _ := stored["metadata"].(map[string]interface{})
			n, _ := md["name"].(string)
			mu.Lock()
			objects = append(objects, genObject{Res: r.GVR, Namespace: ns, Name: n})
			mu.Unlock()
		}
	})
	sort.Slice(objects, func(i, j int) bool {
		a, b := objects[i], objects[j]
		return gvrString(a.Res)+"/"+a.Namespace+"/"+a.Name < gvrString(b.Res)+"/"+b.Namespace+"/"+b.Name
	})
	return objects, stats
}

// runParallel runs f(0) .. f(n-1), up to width at once.
func runParallel(n, width int, f func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, width)
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
