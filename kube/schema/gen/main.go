// Command schemagen prints the schema herald-kube reads protobuf with.
//
// It walks, by reflection, every type reachable from the kinds registered in
// client-go's scheme, the apiextensions scheme and the aggregator's (the
// built-in kinds of one Kubernetes release, CustomResourceDefinition and
// APIService, at the versions the apiserver serves), and prints one JSON
// document: kinds (apiVersion/Kind -> type) and types (name -> fields).
// Each field carries what the Go JSON encoder and the gogo protobuf
// unmarshaller of the apiserver need to be reproduced exactly: its protobuf
// number, its JSON name, omitempty, inline, and its shape (scalar kind,
// pointer, slice, map, message or one of the types with their own JSON:
// Time, MicroTime, Duration, Quantity, IntOrString, RawExtension, FieldsV1,
// apiextensions JSON and the JSONSchemaProps unions). A type with a JSON
// marshaller it does not know makes it fail: never a schema that is wrong
// in silence.
//
//	go run . > ../k8s-v1.37.2.json  (from kube/schema/gen)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	aggscheme "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/scheme"
)

// Field is one Go struct field as the wire and the JSON see it.
type Field struct {
	JSON      string `json:"json"`
	Tag       int    `json:"tag,omitempty"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
	Inline    bool   `json:"inline,omitempty"`
	Shape     Shape  `json:"shape"`
}

// Shape is a Go type as far as the wire and the JSON differ on it.
type Shape struct {
	// string bool int32 int64 uint32 uint64 float64 bytes message special
	// ptr slice map
	Kind string `json:"kind"`
	// The message or special type's name.
	Type string `json:"type,omitempty"`
	// The element of a ptr, slice or map.
	Elem *Shape `json:"elem,omitempty"`
	// A named slice type is a message with `repeated items = 1` on the wire.
	Wrapped bool `json:"wrapped,omitempty"`
}

// Type is one Go struct type's fields in declaration order.
type Type struct {
	Fields []Field `json:"fields"`
}

// Doc is the whole output.
type Doc struct {
	Release string            `json:"release"`
	Kinds   map[string]string `json:"kinds"`
	Types   map[string]Type   `json:"types"`
}

var specials = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":                                             "Time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":                                        "MicroTime",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":                                         "Duration",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":                                         "FieldsV1",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":                                         "Quantity",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString":                                       "IntOrString",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":                                          "RawExtension",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON":                         "JSON",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaPropsOrBool":        "JSONSchemaPropsOrBool",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaPropsOrArray":       "JSONSchemaPropsOrArray",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSONSchemaPropsOrStringArray": "JSONSchemaPropsOrStringArray",
}

var marshaler = reflect.TypeFor[json.Marshaler]()

type walker struct {
	types map[string]Type
	err   []string
}

func name(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// shape is t's shape; elem says t is a slice's or a map's element, where a
// named slice type is a message wrapping `repeated items = 1` (ExtraValue).
func (w *walker) shape(t reflect.Type, where string, elem bool) Shape {
	if t.Name() != "" && t.PkgPath() != "" {
		if s, ok := specials[name(t)]; ok {
			// The unions' members are walked for their own sake.
			if strings.HasPrefix(s, "JSONSchemaProps") {
				w.walk(reflect.TypeFor[apiextv1.JSONSchemaProps]())
			}
			return Shape{Kind: "special", Type: s}
		}
		if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
			w.err = append(w.err, fmt.Sprintf("%s: %s has a JSON marshaller this schema does not know", where, name(t)))
		}
	}
	switch t.Kind() {
	case reflect.String:
		return Shape{Kind: "string"}
	case reflect.Bool:
		return Shape{Kind: "bool"}
	case reflect.Int32:
		return Shape{Kind: "int32"}
	case reflect.Int64, reflect.Int:
		return Shape{Kind: "int64"}
	case reflect.Uint32:
		return Shape{Kind: "uint32"}
	case reflect.Uint64:
		return Shape{Kind: "uint64"}
	case reflect.Float64:
		return Shape{Kind: "float64"}
	case reflect.Pointer:
		e := w.shape(t.Elem(), where, false)
		return Shape{Kind: "ptr", Elem: &e}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return Shape{Kind: "bytes"}
		}
		e := w.shape(t.Elem(), where, true)
		return Shape{Kind: "slice", Elem: &e, Wrapped: elem && t.Name() != ""}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			w.err = append(w.err, fmt.Sprintf("%s: a map keyed by %s", where, t.Key()))
		}
		e := w.shape(t.Elem(), where, true)
		return Shape{Kind: "map", Elem: &e}
	case reflect.Struct:
		w.walk(t)
		return Shape{Kind: "message", Type: name(t)}
	}
	w.err = append(w.err, fmt.Sprintf("%s: Go kind %s", where, t.Kind()))
	return Shape{Kind: "unknown"}
}

func (w *walker) walk(t reflect.Type) {
	n := name(t)
	if _, ok := w.types[n]; ok {
		return
	}
	w.types[n] = Type{} // a cycle (JSONSchemaProps) ends here
	var fields []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		js := f.Tag.Get("json")
		if js == "-" {
			continue
		}
		parts := strings.Split(js, ",")
		field := Field{JSON: parts[0]}
		for _, opt := range parts[1:] {
			switch opt {
			case "omitempty":
				field.OmitEmpty = true
			case "inline":
				// encoding/json knows no "inline": an anonymous
				// field without a name is what it inlines.
			case "omitzero":
				// Only where the zero value is known on both sides: the
				// times (IsZero) and plain scalars.
				field.OmitZero = true
				if s := specials[name(f.Type)]; s != "Time" && s != "MicroTime" && f.Type.Kind() == reflect.Struct {
					w.err = append(w.err, fmt.Sprintf("%s.%s: omitzero on %s", n, f.Name, f.Type))
				}
			default:
				w.err = append(w.err, fmt.Sprintf("%s.%s: JSON option %q", n, f.Name, opt))
			}
		}
		if field.JSON == "" && f.Anonymous {
			field.Inline = true
			if f.Type.Kind() != reflect.Struct {
				w.err = append(w.err, fmt.Sprintf("%s.%s: inlined %s", n, f.Name, f.Type.Kind()))
			}
		}
		if field.JSON == "" && !field.Inline {
			field.JSON = f.Name
		}
		if pb := f.Tag.Get("protobuf"); pb != "" && pb != "-" {
			p := strings.Split(pb, ",")
			tag, err := strconv.Atoi(p[1])
			if err != nil {
				w.err = append(w.err, fmt.Sprintf("%s.%s: protobuf tag %q", n, f.Name, pb))
			}
			field.Tag = tag
		} else if name(f.Type) != "k8s.io/apimachinery/pkg/apis/meta/v1.TypeMeta" {
			// Not on the wire: the zero value, as the apiserver has it.
			field.Tag = 0
		}
		field.Shape = w.shape(f.Type, n+"."+f.Name, false)
		if pb := strings.Split(f.Tag.Get("protobuf"), ","); field.Shape.Kind == "slice" && f.Type.Name() != "" && len(pb) > 2 && pb[2] == "opt" {
			field.Shape.Wrapped = true
		}
		fields = append(fields, field)
	}
	w.types[n] = Type{Fields: fields}
}

func main() {
	w := &walker{types: map[string]Type{}}
	kinds := map[string]string{}
	for _, s := range []*runtime.Scheme{scheme.Scheme, apiextscheme.Scheme, aggscheme.Scheme} {
		for gvk, t := range s.AllKnownTypes() {
			if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "Options") ||
				gvk.Kind == "WatchEvent" || (gvk.Kind == "Status" && gvk.GroupVersion().String() != "v1") || gvk.Kind == "APIVersions" ||
				gvk.Kind == "APIGroupList" || gvk.Kind == "APIGroup" || gvk.Kind == "APIResourceList" ||
				(gvk.Group == "apiextensions.k8s.io" && gvk.Version != "v1") ||
				(gvk.Group == "apiregistration.k8s.io" && gvk.Version != "v1") {
				continue
			}
			kinds[gvk.GroupVersion().String()+"/"+gvk.Kind] = name(t)
			w.walk(t)
		}
	}
	// The watch envelope and Status: what a protobuf watch stream and an
	// error are made of.
	w.walk(reflect.TypeFor[runtime.Unknown]())
	if len(w.err) > 0 {
		sort.Strings(w.err)
		fmt.Fprintln(os.Stderr, strings.Join(w.err, "\n"))
		os.Exit(1)
	}
	release := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/api" {
				release = d.Version
			}
		}
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	if err := out.Encode(Doc{Release: release, Kinds: kinds, Types: w.types}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
