// Package clientgo is the differential test of herald-server against the
// real kube-apiserver, through client-go, kubectl and raw HTTP. It starts its
// own etcd, a kube-apiserver on it and a herald-server reading the same etcd,
// writes a corpus and churn through the apiserver, and requires Herald to
// answer what the apiserver answers: JSON objects and lists, protobuf through
// typed clients, content negotiation, kubectl's tables, discovery, and
// informers (JSON and protobuf, with and without WatchList) that converge
// without relisting. Everything is in the package's tests (`go test ./...`);
// README.md says what they need.
package clientgo
