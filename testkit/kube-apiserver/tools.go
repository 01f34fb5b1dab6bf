//go:build tools

// Package tools pins the one binary this module exists to build.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
