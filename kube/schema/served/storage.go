package main

// The etcd key prefixes, from the apiserver's own code rather than from a
// running server: a resource with no object yet has no key to look at.
//
// kube-apiserver's three servers store under one root (--etcd-prefix,
// default kubeoptions.DefaultEtcdPathPrefix, "/registry") but name keys
// differently:
//   - the built-in groups go through the DefaultStorageFactory that
//     k8s.io/kubernetes/pkg/kubeapiserver builds (NewStorageFactoryConfig,
//     completed and New'd as pkg/controlplane/apiserver/config.go does):
//     SpecialDefaultResourcePrefixes ("minions", "services/specs",
//     "controllers", "ingress", ...), cohabiting resources (events.k8s.io
//     events are core events, extensions ingresses are networking's),
//     else the lower-cased resource name;
//   - the aggregator (apiregistration.k8s.io) and apiextensions servers
//     call EtcdOptions.ApplyTo (pkg/controlplane/apiserver/aggregator.go,
//     apiextensions.go), which uses a SimpleStorageFactory: "<group>/<resource>".
//
// Only resources with a store have a prefix. A registry store always
// serves watch (genericregistry.Store implements rest.Watcher), and every
// REST storage without one (bindings, tokenreviews, componentstatuses,
// the access reviews...) serves no watch: the "watch" verb tells them
// apart. main checks the result against the keys the apiserver wrote to
// etcd while starting (bootstrap RBAC, priority and flow-control objects,
// the default namespaces and APIServices...).

import (
	"fmt"
	"strings"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	apiregistration "k8s.io/kube-aggregator/pkg/apis/apiregistration"
	"k8s.io/kubernetes/pkg/controlplane"
	"k8s.io/kubernetes/pkg/kubeapiserver"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// keyPrefixer returns the etcd key of a resource's objects under the
// "/registry/" root, as the apiserver composes it.
type keyPrefixer struct {
	root string
	kube interface {
		ResourcePrefix(schema.GroupResource) string
	}
	delegated interface {
		ResourcePrefix(schema.GroupResource) string
	}
}

func newKeyPrefixer() (*keyPrefixer, error) {
	// As pkg/controlplane/apiserver/options.NewOptions and
	// config.go's BuildGenericConfig: the kube-apiserver's default etcd
	// options, the default resource configuration (no --runtime-config).
	etcd := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(kubeoptions.DefaultEtcdPathPrefix, nil))
	cfg := kubeapiserver.NewStorageFactoryConfig()
	cfg.APIResourceConfig = controlplane.DefaultAPIResourceConfigSource()
	kube, err := cfg.Complete(etcd).New()
	if err != nil {
		return nil, fmt.Errorf("the kube-apiserver's storage factory: %w", err)
	}
	return &keyPrefixer{
		root:      strings.TrimSuffix(etcd.StorageConfig.Prefix, "/") + "/",
		kube:      kube,
		delegated: &genericoptions.SimpleStorageFactory{StorageConfig: etcd.StorageConfig},
	}, nil
}

// prefix is the key prefix (without the root) of group/resource.
func (k *keyPrefixer) prefix(group, resource string) string {
	gr := schema.GroupResource{Group: group, Resource: resource}
	switch group {
	case apiregistration.GroupName, apiextensions.GroupName:
		return strings.TrimPrefix(k.delegated.ResourcePrefix(gr), "/")
	default:
		return strings.TrimPrefix(k.kube.ResourcePrefix(gr), "/")
	}
}
