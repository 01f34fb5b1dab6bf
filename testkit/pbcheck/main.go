// Command pbcheck checks herald-kube's protobuf encoder
// (kube/src/proto/encode.rs) against the apiserver's own serializers.
//
// herald-kube's test every_corpus_object_encodes_as_the_apiserver_does
// writes, when HERALD_PBCHECK_DIR is set, NAME.json (an object as Herald
// holds it, written as Go writes JSON) and NAME.pb (herald-kube's
// proto::encode of it) for every object of kube/tests/proto/corpus.json and
// every vector the real kube-apiserver served. For each pair this requires:
//
//   - Go's way from the JSON: the apiserver's JSON serializer reads NAME.json
//     into the typed object of its apiVersion and kind, and the protobuf
//     serializer writes that object: the bytes must be NAME.pb's;
//   - Go's reading of NAME.pb: the protobuf serializer reads it and writes
//     the object again: the bytes must be NAME.pb's (they are gogo's
//     canonical form, and nothing in them is lost on the way).
//
// Run (from the repository root):
//
//	HERALD_PBCHECK_DIR=/tmp/pbcheck cargo test -p herald-kube every_corpus_object
//	(cd testkit/pbcheck && go run . /tmp/pbcheck)
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

type codecs struct {
	json  *json.Serializer
	proto *protobuf.Serializer
}

func newCodecs(s *runtime.Scheme) codecs {
	return codecs{
		json:  json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{}),
		proto: protobuf.NewSerializer(s, s),
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pbcheck DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		fmt.Fprintf(os.Stderr, "%s: no NAME.json (%v)\n", dir, err)
		os.Exit(2)
	}
	sort.Strings(names)
	builtin, apiext := newCodecs(scheme.Scheme), newCodecs(apiextscheme.Scheme)
	failed := 0
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		if err := check(path, builtin, apiext); err != nil {
			fmt.Printf("FAIL %s: %v\n", name, err)
			failed++
		} else {
			fmt.Printf("ok   %s\n", name)
		}
	}
	fmt.Printf("%d of %d objects encode as the apiserver encodes them\n", len(names)-failed, len(names))
	if failed > 0 {
		os.Exit(1)
	}
}

func check(path string, builtin, apiext codecs) error {
	js, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	mine, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".pb")
	if err != nil {
		return err
	}
	gvk, err := json.DefaultMetaFactory.Interpret(js)
	if err != nil {
		return err
	}
	c := builtin
	if gvk.Group == "apiextensions.k8s.io" {
		c = apiext
	}
	obj, _, err := c.json.Decode(js, nil, nil)
	if err != nil {
		return fmt.Errorf("the JSON serializer: %w", err)
	}
	var fromJSON bytes.Buffer
	if err := c.proto.Encode(obj, &fromJSON); err != nil {
		return fmt.Errorf("the protobuf serializer: %w", err)
	}
	if d := firstDiff(fromJSON.Bytes(), mine); d != "" {
		return fmt.Errorf("from the JSON, Go writes other bytes: %s", d)
	}
	back, got, err := c.proto.Decode(mine, nil, nil)
	if err != nil {
		return fmt.Errorf("reading herald's bytes: %w", err)
	}
	if *got != *gvk {
		return fmt.Errorf("herald's bytes are a %v, not a %v", got, gvk)
	}
	var again bytes.Buffer
	if err := c.proto.Encode(back, &again); err != nil {
		return err
	}
	if d := firstDiff(again.Bytes(), mine); d != "" {
		return fmt.Errorf("read and written again, herald's bytes change: %s", d)
	}
	return nil
}

func firstDiff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	at := 0
	for at < len(want) && at < len(got) && want[at] == got[at] {
		at++
	}
	lo := max(at-16, 0)
	return fmt.Sprintf("%d bytes against herald's %d, first difference at %d:\n  go:     %q\n  herald: %q",
		len(want), len(got), at, want[lo:min(at+48, len(want))], got[lo:min(at+48, len(got))])
}
