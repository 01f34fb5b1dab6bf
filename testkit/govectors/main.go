// govectors writes the vectors herald-kube's Go-compatible JSON and YAML
// writers are tested against (kube/testdata/go_vectors.json), made by the
// code the apiserver runs: a custom resource's stored JSON read as
// unstructured (k8s.io/apimachinery/pkg/util/json, ints preserved) and
// written with encoding/json (sorted keys, Go's escaping and numbers),
// that JSON as YAML through sigs.k8s.io/yaml's JSONToYAML, Go strings
// (invalid UTF-8 included) and float64s through encoding/json.
//
// go-yaml sorts keys with a comparison that is not transitive for some
// mixes of digits and letters ("10" < "1a" < "9" < "10", "x1y" < "x2y" < "x10y" < "x1y"): over Go's
// random map order its output is not deterministic there, and no vector
// has such keys.
//
// Run from this directory: go run . > ../../kube/testdata/go_vectors.json
// and go run . selectors > ../../kube/testdata/go_selector_errors.json
// (the 400 messages the apiserver's list options conversion gives bad
// label and field selectors: [parameter, selector, message or "OK"]).
package main

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"net/url"
	"os"

	"k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

type doc struct {
	Input string `json:"input_hex"`
	JSON  string `json:"json"`
	YAML  string `json:"yaml"`
}

type str struct {
	Input string `json:"input_hex"`
	JSON  string `json:"json"`
}

type float struct {
	Bits uint64 `json:"bits"`
	JSON string `json:"json"`
}

type out struct {
	Docs    []doc   `json:"docs"`
	Strings []str   `json:"strings"`
	Floats  []float `json:"floats"`
}

var docs = []string{
	`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","resourceVersion":"214","creationTimestamp":"2026-11-27T21:05:21Z","labels":{},"finalizers":[]},"data":{"b":"","a":"x\ny\n","yes":"no","n":"1.5"},"items":[{"name":"a","ports":[80,443]},"plain",[1,2],{},[],[[{"x":[]}]]],"count":3,"ok":true,"none":null}`,
	`{"metadata":{"name":"order"},"spec":{"a10":1,"a9":2,"A":3,"_x":4,"é":5,"a01":6,"a1":7,"a001":8,"b":9,"B":10,"10":12,"9":13,"x-y":14,"x.y":15,"x_y":16,"xy":17,"x10y":19,"x2y":20}}`,
	`{"metadata":{"name":"fold"},"spec":{"dq":"a: aaaa\tbbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss tttt","dq2":"x\tyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy  zz  z","sq":"'aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss","twospace":"aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp  qqqq rrrr","deep":{"deeper":{"deepest":[{"k":"aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp"}]}},"lit":"line one is quite long aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm\nline two\n","nel":"a\u0085b","ls2":"a\u2028b\nc","crlf":"a\r\nb","tabnl":"a\tb\nc","emoji":"😀 x","last":"end\n\n"}}`,
	`{}`,
	`{"a":[[]],"b":[{}],"c":[[[1]]],"d":[{"e":[{"f":{}}]}]}`,
	`{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5","labels":{"z":"1","a":"2"}},"spec":{"z":1,"b":{"y":[3,{"q":1,"c":2}],"a":null},"a":true}}`,
	`{"metadata":{"name":"html"},"spec":{"s":"<a href=\"x\">&amp;</a>","ls":"\u2028\u2029","ctl":"\u0000\u0001\b\f\n\r\t\u001f\u007f","uni":"é😀\ud83d\ude00","esc":"\/\\"}}`,
	`{"metadata":{"name":"num"},"spec":{"f":[1e21,1e-7,0.1,-0,-0.0,5e-324,1.7976931348623157e308,1e20,1.0,1e2,100000000000000000000,123456789.125,2.5e300,1.5e-7,0.000001,-1e-7,3.14]}}`,
	`{"metadata":{"name":"int"},"spec":{"i":[9223372036854775807,-9223372036854775808,9223372036854775808,18446744073709551615,18446744073709551616,0,-1,12345678901234567890]}}`,
	`{"metadata":{"name":"bad"},"spec":{"s":"a` + "\xff\xfe\xe2\x80A\xed\xa0\x80\xc3" + `b","k` + "\xff" + `":"v"}}`,
	`{"spec":{"b":{},"a":[],"c":[{}],"d":[[]],"e":[[1,2],[3]],"f":{"x":{"y":{"z":[{"a":1,"b":[{"c":2}]}]}}}},"metadata":{"name":"nest"}}`,
	`{"metadata":{"name":"yamlstr"},"data":{"empty":"","yes":"yes","no":"No","on":"on","null":"null","tilde":"~","num":"1.5","int":"42","oct":"0755","hex":"0x1F","exp":"1e3","date":"2026-11-27T21:05:21Z","colon":"a: b","hash":"a #b","lead":" x","trail":"x ","star":"*x","amp":"&x","bang":"!x","pct":"%x","at":"@x","tick":"` + "`" + `x","q":"'x'","dq":"\"x\"","dash":"- x","dash2":"-x","qm":"? x","brace":"{x}","brack":"[x]","comma":"a,b","pipe":"|x","gt":">x","nl":"a\nb","nl2":"a\nb\n","nl3":"a\n\n","nlonly":"\n","tab":"a\tb","ctl":"a\u0001b","uni":"é😀","ls":"a\u2028b","nbsp":"a\u00a0b","bom":"\ufeffx","long":"aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr ssss tttt uuuu","longword":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","longq":"a: aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr","nlsp":"a \nb","nllead":" a\nb","dots":"...","doc":"---","x.y":"TRUE","True":"False","Y":"n","NaN":".nan","inf":".inf","neg":"-.inf","plus":"+1","under":"1_000","bin":"0b101","colon2":"a:b","url":"http://x/y?a=b&c","ws":"   ","sp":" ","eq":"=","lt":"<","sq":"it's"}}`,
	`{"metadata":{"name":"yamlnum"},"spec":{"a":[1,-1,1.5,1e21,1e-7,0.1,100000000000000000000,9223372036854775807,18446744073709551615,true,false,null,-0.0,5e-324,1.7976931348623157e308,1.0,1e6,1e15,123456.789]}}`,
	`{"metadata":{"name":"keys"},"spec":{"":"empty key","a b":1,"1":2,"true":3,"-":4,"a:b":5,"long key aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":6,"nl\nkey":7}}`,
}

var strs = []string{
	"plain", "<>&", "\u2028\u2029", "a\xffb", "\xe2\x80", "\xed\xa0\x80", "\x00\x1f\x7f", "\ufffd", "\"\\/",
}

var floats = []float64{1e21, 1e-7, 0.1, math.Copysign(0, -1), 0, 5e-324, 1.7976931348623157e308,
	1e20, 1, 100, 123456789.125, 2.5e300, 1.5e-7, 1e-6, -1e-7, 3.14, 1.8446744073709552e19, 9.223372036854776e18, 0.3, 2.2250738585072014e-308, 999999999999999900000, 1e-5, 123e-20}

var selectors = [][2]string{
	{"labelSelector", "app in (web"}, {"labelSelector", "a b"}, {"labelSelector", "x=y=z"},
	{"labelSelector", "!"}, {"labelSelector", "a,"}, {"labelSelector", "-a=b"}, {"labelSelector", "a=-b"},
	{"labelSelector", "a in ()"}, {"labelSelector", "a>b"}, {"labelSelector", "a>1,b<x"},
	{"labelSelector", "a notin (x"}, {"labelSelector", "a=b)"}, {"labelSelector", "(a)"},
	{"labelSelector", "a in (b c)"}, {"labelSelector", "a!="}, {"labelSelector", "=b"},
	{"labelSelector", "a=<b>"}, {"labelSelector", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=b"},
	{"labelSelector", "a/b/c=d"}, {"labelSelector", "A_.b/c=d"}, {"labelSelector", "/c=d"}, {"labelSelector", "a/=d"},
	{"labelSelector", "a>-b"}, {"labelSelector", "a in (-x, y, -z)"}, {"labelSelector", "a in (x,,y)"},
	{"labelSelector", "a in (,)"}, {"labelSelector", "a in x"}, {"labelSelector", "a in (=)"}, {"labelSelector", "a in (x=)"},
	{"labelSelector", "a in"}, {"labelSelector", "a notin"}, {"labelSelector", "!a=b"}, {"labelSelector", "!!a"},
	{"labelSelector", "a=!b"}, {"labelSelector", "a==b,c!=d,!e,f"}, {"labelSelector", "a=b,,c"},
	{"labelSelector", "a,=b"}, {"labelSelector", "in=x"}, {"labelSelector", "a=in"}, {"labelSelector", "a=(b)"},
	{"labelSelector", "a<>b"}, {"labelSelector", "a=<"}, {"labelSelector", "a>+5"}, {"labelSelector", "a<99999999999999999999"},
	{"labelSelector", "a=" + string(make([]byte, 64)) + "x"}, {"labelSelector", "a=b\x00c"}, {"labelSelector", "é=b"},
	{"labelSelector", "a=é"}, {"labelSelector", "a.b-c_d=e.f-g_h"}, {"labelSelector", "example.com/a=b"},
	{"labelSelector", "a in (b),"}, {"labelSelector", "  a  =  b  "}, {"labelSelector", "a=\"q\""},
	{"fieldSelector", "a"}, {"fieldSelector", "a==b==c"}, {"fieldSelector", "a=b,c"}, {"fieldSelector", "a!b"},
	{"fieldSelector", "a=\\x"}, {"fieldSelector", "spec.nodeName=x"}, {"fieldSelector", "a=b&c"},
	{"fieldSelector", "z,a=b=c"}, {"fieldSelector", "a=b\\"}, {"fieldSelector", "a=b\\,c"}, {"fieldSelector", ",,"},
	{"fieldSelector", "a!=b,c==d,e=f"}, {"fieldSelector", "=x"}, {"fieldSelector", "a=x,b"}, {"fieldSelector", "a=\\=,b=\\\\"},
}

func selectorMessages() {
	var rows [][3]string
	for _, s := range selectors {
		var opts metainternalversion.ListOptions
		err := metainternalversionscheme.ParameterCodec.DecodeParameters(url.Values{s[0]: {s[1]}}, metav1.SchemeGroupVersion, &opts)
		msg := "OK"
		if err != nil {
			msg = errors.NewBadRequest(err.Error()).ErrStatus.Message
		}
		rows = append(rows, [3]string{s[0], s[1], msg})
	}
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", " ")
	if err := e.Encode(rows); err != nil {
		panic(err)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "selectors" {
		selectorMessages()
		return
	}
	var o out
	for _, d := range docs {
		var m map[string]interface{}
		if err := utiljson.Unmarshal([]byte(d), &m); err != nil {
			panic(err)
		}
		j, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			// The apiserver's YAML answer fails too.
			y = []byte("error: " + err.Error())
		}
		o.Docs = append(o.Docs, doc{hex.EncodeToString([]byte(d)), string(j), string(y)})
	}
	for _, s := range strs {
		j, _ := json.Marshal(s)
		o.Strings = append(o.Strings, str{hex.EncodeToString([]byte(s)), string(j)})
	}
	for _, f := range floats {
		j, _ := json.Marshal(f)
		o.Floats = append(o.Floats, float{math.Float64bits(f), string(j)})
	}
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", " ")
	if err := e.Encode(o); err != nil {
		panic(err)
	}
}
