package clientgo

// Protobuf: typed List and Get of every built-in kind, decoded by client-go
// from application/vnd.kubernetes.protobuf, equal (apiequality.Semantic)
// to the same calls against the apiserver.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/dump"
)

// typedScheme is client-go's scheme with the apiextensions and the
// aggregator's types: every built-in kind a typed client decodes.
var typedScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(apiregistrationv1.AddToScheme(s))
	return s
}()

var typedCodecs = serializer.NewCodecFactory(typedScheme)

// typedParams encodes list options for every group of typedScheme.
var typedParams = runtime.NewParameterCodec(typedScheme)

// typedREST is the REST client a generated typed client builds for one
// group version (the same serializers, the same decode into Go types).
func typedREST(cfg *rest.Config, gv schema.GroupVersion) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = typedCodecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

// typedCall is one typed List or Get against both servers.
type typedCall struct {
	what string
	call func(cfg *rest.Config) (runtime.Object, error)
}

// compareTyped compares Herald's typed answer with the apiserver's: a list
// item by item (keyed namespace/name; the lists' resourceVersion may
// differ), an object whole.
func compareTyped(section, res, what string, h, a runtime.Object, d *differences) {
	if meta.IsListType(a) {
		hi, err1 := meta.ExtractList(h)
		ai, err2 := meta.ExtractList(a)
		if err1 != nil || err2 != nil {
			d.add(section, res, what, []jsonDiff{{Path: "(list)", Herald: fmt.Sprint(err1), API: fmt.Sprint(err2)}})
			return
		}
		hm := map[string]runtime.Object{}
		for _, o := range hi {
			hm[objKey(o)] = o
		}
		seen := map[string]bool{}
		for _, o := range ai {
			k := objKey(o)
			seen[k] = true
			x, ok := hm[k]
			if !ok {
				d.add(section, res, what+" "+k, []jsonDiff{{Path: "(item)", Herald: "(absent)", API: "listed"}})
				continue
			}
			compareTyped(section, res, what+" "+k, x, o, d)
		}
		for k := range hm {
			if !seen[k] {
				d.add(section, res, what+" "+k, []jsonDiff{{Path: "(item)", Herald: "listed", API: "(absent)"}})
			}
		}
		hl, _ := meta.ListAccessor(h)
		al, _ := meta.ListAccessor(a)
		if hl != nil && al != nil && (hl.GetContinue() != al.GetContinue() || fmt.Sprint(hl.GetRemainingItemCount()) != fmt.Sprint(al.GetRemainingItemCount())) {
			d.add(section, res, what, []jsonDiff{{Path: ".metadata (continue, remainingItemCount)",
				Herald: fmt.Sprintf("%q %v", hl.GetContinue(), hl.GetRemainingItemCount()),
				API:    fmt.Sprintf("%q %v", al.GetContinue(), al.GetRemainingItemCount())}})
		}
		return
	}
	if apiequality.Semantic.DeepEqual(h, a) {
		return
	}
	d.add(section, res, what, typedDiff(h, a))
}

// typedDiff explains two typed objects that differ: their JSON's
// differences, else the first line of their Go dumps that differs.
func typedDiff(h, a interface{}) []jsonDiff {
	hb, err1 := json.Marshal(h)
	ab, err2 := json.Marshal(a)
	if err1 == nil && err2 == nil {
		hv, _ := decodeJSON(hb)
		av, _ := decodeJSON(ab)
		if ds := diffJSON(hv, av, 10); len(ds) > 0 {
			return ds
		}
	}
	hl := strings.Split(dump.Pretty(h), "\n")
	al := strings.Split(dump.Pretty(a), "\n")
	for i := 0; i < len(hl) || i < len(al); i++ {
		var x, y string
		if i < len(hl) {
			x = hl[i]
		}
		if i < len(al) {
			y = al[i]
		}
		if x != y {
			return []jsonDiff{{Path: fmt.Sprintf("(Go dump line %d; JSON equal)", i+1), Herald: strings.TrimSpace(x), API: strings.TrimSpace(y)}}
		}
	}
	return []jsonDiff{{Path: "(typed objects differ semantically)", Herald: "?", API: "?"}}
}

func objKey(o runtime.Object) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// testProtobuf lists and gets every built-in resource both serve through
// typed decoding from protobuf, Herald against the apiserver; and the same
// through the generated clientsets for a few kinds.
func testProtobuf(ctx context.Context, t *testing.T, c *cluster, res []apiRes, d *differences) {
	from := d.count()
	hcfg := withContent(c.heraldConfig(), protoContent())
	acfg := withContent(c.apiConfig(), protoContent())
	// Every request must have been answered in protobuf: count what came
	// back otherwise.
	var nonProto []string
	hcfg.WrapTransport = contentTypeCheck(protoType, &nonProto)

	var calls []struct {
		res string
		typedCall
	}
	add := func(res string, tc typedCall) {
		calls = append(calls, struct {
			res string
			typedCall
		}{res, tc})
	}
	for _, r := range res {
		if !r.builtin() {
			continue
		}
		r := r
		gvk := r.GVR.GroupVersion().WithKind(r.API.Kind)
		if !typedScheme.Recognizes(gvk) {
			t.Errorf("%s: kind %s is not in client-go's scheme: no typed client to compare with", r, gvk)
			continue
		}
		list := func(ns string) typedCall {
			return typedCall{what: "list " + r.path(ns), call: func(cfg *rest.Config) (runtime.Object, error) {
				rc, err := typedREST(cfg, r.GVR.GroupVersion())
				if err != nil {
					return nil, err
				}
				out, err := typedScheme.New(r.GVR.GroupVersion().WithKind(r.API.Kind + "List"))
				if err != nil {
					return nil, err
				}
				return out, rc.Get().AbsPath(r.path(ns)).Do(ctx).Into(out)
			}}
		}
		add(r.String(), list(""))
		if r.namespaced() {
			add(r.String(), list("diff"))
		}
		// Get every object the apiserver lists.
		arc, err := typedREST(acfg, r.GVR.GroupVersion())
		if err != nil {
			t.Fatal(err)
		}
		al, err := typedScheme.New(r.GVR.GroupVersion().WithKind(r.API.Kind + "List"))
		if err != nil {
			t.Fatal(err)
		}
		if err := arc.Get().AbsPath(r.path("")).Do(ctx).Into(al); err != nil {
			t.Errorf("apiserver protobuf list %s: %v", r, err)
			continue
		}
		items, _ := meta.ExtractList(al)
		for _, it := range items {
			m, _ := meta.Accessor(it)
			ns, name := m.GetNamespace(), m.GetName()
			add(r.String(), typedCall{what: "get " + r.objectPath(ns, name), call: func(cfg *rest.Config) (runtime.Object, error) {
				rc, err := typedREST(cfg, r.GVR.GroupVersion())
				if err != nil {
					return nil, err
				}
				out, err := typedScheme.New(gvk)
				if err != nil {
					return nil, err
				}
				return out, rc.Get().AbsPath(r.objectPath(ns, name)).Do(ctx).Into(out)
			}})
		}
	}
	// The generated clientsets themselves, for the kinds the informers use
	// and the CRDs.
	servedRes := map[string]bool{}
	for _, r := range res {
		servedRes[r.String()] = true
	}
	cs := func(cfg *rest.Config) kubernetes.Interface { return kubernetes.NewForConfigOrDie(cfg) }
	opts := metav1.ListOptions{}
	clientsets := map[string]typedCall{
		"v1/pods": {"clientset CoreV1().Pods(\"\").List", func(cfg *rest.Config) (runtime.Object, error) {
			return cs(cfg).CoreV1().Pods("").List(ctx, opts)
		}},
		"v1/configmaps": {"clientset CoreV1().ConfigMaps(\"diff\").Get(settings)", func(cfg *rest.Config) (runtime.Object, error) {
			return cs(cfg).CoreV1().ConfigMaps("diff").Get(ctx, "settings", metav1.GetOptions{})
		}},
		"v1/secrets": {"clientset CoreV1().Secrets(\"\").List", func(cfg *rest.Config) (runtime.Object, error) {
			return cs(cfg).CoreV1().Secrets("").List(ctx, opts)
		}},
		"v1/nodes": {"clientset CoreV1().Nodes().List", func(cfg *rest.Config) (runtime.Object, error) {
			return cs(cfg).CoreV1().Nodes().List(ctx, opts)
		}},
		"apps/v1/deployments": {"clientset AppsV1().Deployments(\"\").List", func(cfg *rest.Config) (runtime.Object, error) {
			return cs(cfg).AppsV1().Deployments("").List(ctx, opts)
		}},
		"apiextensions.k8s.io/v1/customresourcedefinitions": {"apiextensions clientset CustomResourceDefinitions().Get(widgets.herald.dev)", func(cfg *rest.Config) (runtime.Object, error) {
			return apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.herald.dev", metav1.GetOptions{})
		}},
	}
	names := make([]string, 0, len(clientsets))
	for k := range clientsets {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if servedRes[k] {
			add(k, clientsets[k])
		}
	}

	inParallel(len(calls), func(i int) {
		call := calls[i]
		h, herr := call.call(hcfg)
		a, aerr := call.call(acfg)
		if aerr != nil {
			t.Errorf("apiserver protobuf %s: %v", call.what, aerr)
			return
		}
		if herr != nil {
			d.add("protobuf", call.res, call.what, []jsonDiff{{Path: "(request)", Herald: "error: " + herr.Error(), API: "ok"}})
			return
		}
		compareTyped("protobuf", call.res, call.what, h, a, d)
	})
	for _, s := range nonProto {
		d.add("protobuf", "(content type)", s, []jsonDiff{{Path: "(Content-Type)", Herald: "not protobuf", API: protoType}})
	}
	t.Logf("protobuf: %d typed calls against each server; %d difference(s)", len(calls), d.count()-from)
	d.report(t, from)
}
