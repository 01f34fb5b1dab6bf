package clientgo

// JSON values compared as the brief of this test asks: both documents
// decoded by encoding/json into interface{}, equal under reflect.DeepEqual;
// when they are not, the paths where they differ (the first one first).

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// decodeJSON decodes a document into interface{}.
func decodeJSON(b []byte) (interface{}, error) {
	var v interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonDiff is one difference: where, Herald's value, the apiserver's.
type jsonDiff struct {
	Path   string
	Herald string // "(absent)" when the key is missing
	API    string
}

func (d jsonDiff) String() string {
	return fmt.Sprintf("%s: herald %s, apiserver %s", d.Path, d.Herald, d.API)
}

// diffJSON lists the differences between Herald's value and the apiserver's,
// in document order (keys sorted), at most max of them. Empty when the two
// are reflect.DeepEqual.
func diffJSON(herald, api interface{}, max int) []jsonDiff {
	if reflect.DeepEqual(herald, api) {
		return nil
	}
	var out []jsonDiff
	walkDiff("", herald, api, true, true, &out, max)
	if len(out) == 0 { // DeepEqual said no; never leave it unexplained
		out = append(out, jsonDiff{Path: "(root)", Herald: short(herald), API: short(api)})
	}
	return out
}

func walkDiff(path string, h, a interface{}, hOK, aOK bool, out *[]jsonDiff, max int) {
	if len(*out) >= max {
		return
	}
	if !hOK || !aOK {
		d := jsonDiff{Path: orRoot(path), Herald: "(absent)", API: "(absent)"}
		if hOK {
			d.Herald = short(h)
		}
		if aOK {
			d.API = short(a)
		}
		*out = append(*out, d)
		return
	}
	switch hv := h.(type) {
	case map[string]interface{}:
		av, ok := a.(map[string]interface{})
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range hv {
			keys[k] = true
		}
		for k := range av {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			x, xok := hv[k]
			y, yok := av[k]
			if xok && yok && reflect.DeepEqual(x, y) {
				continue
			}
			walkDiff(path+keyPath(k), x, y, xok, yok, out, max)
		}
		return
	case []interface{}:
		av, ok := a.([]interface{})
		if !ok {
			break
		}
		n := len(hv)
		if len(av) > n {
			n = len(av)
		}
		for i := 0; i < n; i++ {
			var x, y interface{}
			xok, yok := i < len(hv), i < len(av)
			if xok {
				x = hv[i]
			}
			if yok {
				y = av[i]
			}
			if xok && yok && reflect.DeepEqual(x, y) {
				continue
			}
			walkDiff(fmt.Sprintf("%s[%d]", path, i), x, y, xok, yok, out, max)
		}
		return
	}
	if !reflect.DeepEqual(h, a) {
		*out = append(*out, jsonDiff{Path: orRoot(path), Herald: short(h), API: short(a)})
	}
}

// keyPath writes a map key as .key, or ["key"] when it is not a plain word.
func keyPath(k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func orRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// short is a value's JSON, cut at 300 bytes.
func short(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "...(" + strconv.Itoa(len(b)) + " bytes)"
	}
	return s
}

// formatDiffs writes differences one a line, indented.
func formatDiffs(ds []jsonDiff) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n      ")
		b.WriteString(d.String())
	}
	return b.String()
}
