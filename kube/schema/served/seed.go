package main

// A check of the key prefixes where they are not the resource's name: an
// object of each such resource (and of the two servers with their own
// factory) is created, after discovery was read (a CRD adds a group), and
// its etcd key must be <root><keyPrefix>/[<namespace>/]<name>. (The
// APIService is of another group than the CRD's, which the apiserver
// registers one for itself.)

import (
	"context"
	"fmt"
	"net/http"
	"sort"
)

// seed is one object to create.
type seed struct {
	group, resource string
	namespace, name string
	body            string
}

const seedName = "servedgen"

var seeds = []seed{
	{"", "nodes", "", seedName, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"servedgen"}}`},
	{"", "services", "default", seedName, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"servedgen"},"spec":{"ports":[{"port":80}]}}`},
	{"", "endpoints", "default", seedName, `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"servedgen"}}`},
	{"", "replicationcontrollers", "default", seedName, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"servedgen"},
		"spec":{"replicas":0,"selector":{"app":"servedgen"},"template":{"metadata":{"labels":{"app":"servedgen"}},
		"spec":{"containers":[{"name":"c","image":"servedgen"}]}}}}`},
	{"", "events", "default", seedName, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"servedgen"},
		"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"R","message":"m","type":"Normal",
		"source":{"component":"servedgen"}}`},
	{"events.k8s.io", "events", "default", seedName + "-new", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"servedgen-new"},
		"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"servedgen.example/c","reportingInstance":"i",
		"action":"A","reason":"R","regarding":{"kind":"Pod","name":"p","namespace":"default"},"type":"Normal"}`},
	{"networking.k8s.io", "ingresses", "default", seedName, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"servedgen"},
		"spec":{"defaultBackend":{"service":{"name":"s","port":{"number":80}}}}}`},
	{"apiextensions.k8s.io", "customresourcedefinitions", "", "widgets.servedgen.example", `{"apiVersion":"apiextensions.k8s.io/v1",
		"kind":"CustomResourceDefinition","metadata":{"name":"widgets.servedgen.example"},"spec":{"group":"servedgen.example",
		"names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced",
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`},
	{"apiregistration.k8s.io", "apiservices", "", "v1.aggregated.servedgen.example", `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService",
		"metadata":{"name":"v1.aggregated.servedgen.example"},"spec":{"group":"aggregated.servedgen.example","version":"v1","groupPriorityMinimum":1,
		"versionPriority":1}}`},
}

// checkSeeds creates the seeds in their group's preferred version and
// finds each one's key.
func checkSeeds(ctx context.Context, c *cluster, root string, resources []Resource) error {
	for _, s := range seeds {
		var r *Resource
		for i := range resources {
			x := &resources[i]
			if x.Group == s.group && x.Resource == s.resource && x.Preferred {
				r = x
			}
		}
		if r == nil || r.KeyPrefix == "" {
			return fmt.Errorf("seed %s/%s: no such stored resource served", s.group, s.resource)
		}
		path := r.objectsPath()
		if s.namespace != "" && s.namespace != "default" {
			return fmt.Errorf("seed %s: only namespace default", r.String())
		}
		resp, body, err := c.do(ctx, http.MethodPost, path, http.Header{"Content-Type": {"application/json"}}, []byte(s.body))
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("creating a %s: %d %s", r.String(), resp.StatusCode, body)
		}
	}
	keys, err := etcdKeys(ctx, c, root)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, k := range keys {
		have[k] = true
	}
	var checked []string
	for _, s := range seeds {
		for _, r := range resources {
			if r.Group != s.group || r.Resource != s.resource || !r.Preferred {
				continue
			}
			key := root + r.KeyPrefix + "/" + s.name
			if s.namespace != "" {
				key = root + r.KeyPrefix + "/" + s.namespace + "/" + s.name
			}
			if !have[key] {
				return fmt.Errorf("the %s created is not at %s (its keyPrefix %q is wrong?)", r.String(), key, r.KeyPrefix)
			}
			checked = append(checked, key)
		}
	}
	sort.Strings(checked)
	logf("seeded objects found at %v", checked)
	return nil
}
