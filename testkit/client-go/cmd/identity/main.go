// Command identity reads a cluster with client-go as the user its
// kubeconfig holds, and prints what each read got, one JSON line each:
// a typed list of pods, a typed get of a Secret, a dynamic watch of a
// custom resource, and a typed watch of pods. herald-server's
// tests/access_real.rs runs it against the kube-apiserver and against
// Herald with each identity's kubeconfig, and requires the same lines.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// outcome is what one read got.
type outcome struct {
	Op      string `json:"op"`
	OK      bool   `json:"ok"`
	Code    int32  `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Items   int    `json:"items,omitempty"`
}

func result(op string, items int, err error) outcome {
	o := outcome{Op: op, OK: err == nil, Items: items}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		o.Code, o.Reason, o.Message = s.Code, string(s.Reason), s.Message
	} else if err != nil {
		o.Message = err.Error()
	}
	return o
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the identity's kubeconfig")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	config.Timeout = 10 * time.Second
	typed := kubernetes.NewForConfigOrDie(config)
	dyn := dynamic.NewForConfigOrDie(config)
	ctx := context.Background()
	var out []outcome

	pods, err := typed.CoreV1().Pods("ns-a").List(ctx, metav1.ListOptions{})
	n := 0
	if err == nil {
		n = len(pods.Items)
	}
	out = append(out, result("list pods -n ns-a", n, err))

	_, err = typed.CoreV1().Secrets("ns-a").Get(ctx, "token", metav1.GetOptions{})
	out = append(out, result("get secret ns-a/token", 0, err))

	one := int64(1)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	w, err := dyn.Resource(widgets).Namespace("ns-b").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &one})
	if err == nil {
		for range w.ResultChan() {
		}
	}
	out = append(out, result("watch widgets -n ns-b", 0, err))

	pw, err := typed.CoreV1().Pods("ns-b").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &one})
	if err == nil {
		for range pw.ResultChan() {
		}
	}
	out = append(out, result("watch pods -n ns-b", 0, err))

	for _, o := range out {
		line, _ := json.Marshal(o)
		fmt.Println(string(line))
	}
}
