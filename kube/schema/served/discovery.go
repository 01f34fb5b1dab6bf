package main

// Legacy discovery, as kubectl and client-go read it without the
// aggregated-discovery Accept header: /api, /api/v1, /apis and
// /apis/<group>/<version>.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// do sends one request and reads the whole answer.
func (c *cluster) do(ctx context.Context, method, path string, header http.Header, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.apiURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return resp, b, nil
}

// getJSON is a GET answered 200 with JSON.
func (c *cluster) getJSON(ctx context.Context, path string, into any) error {
	resp, body, err := c.do(ctx, http.MethodGet, path, http.Header{"Accept": {"application/json"}}, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// discover reads every resource of every served group-version, sorted.
func discover(ctx context.Context, c *cluster) ([]Resource, error) {
	type gv struct {
		group, version, path string
		preferred            bool
	}
	var gvs []gv
	var core metav1.APIVersions
	if err := c.getJSON(ctx, "/api", &core); err != nil {
		return nil, err
	}
	for _, v := range core.Versions {
		// The legacy group has one version, its preferred one.
		gvs = append(gvs, gv{"", v, "/api/" + v, len(core.Versions) == 1})
	}
	if len(core.Versions) != 1 {
		return nil, fmt.Errorf("/api serves %v: which is preferred?", core.Versions)
	}
	var groups metav1.APIGroupList
	if err := c.getJSON(ctx, "/apis", &groups); err != nil {
		return nil, err
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			gvs = append(gvs, gv{g.Name, v.Version, "/apis/" + v.GroupVersion, v.Version == g.PreferredVersion.Version})
		}
	}

	var out []Resource
	for _, gv := range gvs {
		var list metav1.APIResourceList
		if err := c.getJSON(ctx, gv.path, &list); err != nil {
			return nil, err
		}
		subs := map[string][]string{}
		for _, r := range list.APIResources {
			if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
				subs[parent] = append(subs[parent], sub)
			}
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			// Discovery leaves group and version empty when they are
			// the list's own.
			if (r.Group != "" && r.Group != gv.group) || (r.Version != "" && r.Version != gv.version) {
				return nil, fmt.Errorf("%s lists %s in %s/%s", gv.path, r.Name, r.Group, r.Version)
			}
			// Verbs, short names and categories in discovery's order.
			sub := subs[r.Name]
			sort.Strings(sub)
			delete(subs, r.Name)
			out = append(out, Resource{
				Group:              gv.group,
				Version:            gv.version,
				Resource:           r.Name,
				SingularName:       r.SingularName,
				Kind:               r.Kind,
				Namespaced:         r.Namespaced,
				Verbs:              r.Verbs,
				ShortNames:         r.ShortNames,
				Categories:         r.Categories,
				StorageVersionHash: r.StorageVersionHash,
				Preferred:          gv.preferred,
				Subresources:       sub,
			})
		}
		for parent := range subs {
			return nil, fmt.Errorf("%s lists subresources of %s, which it does not list", gv.path, parent)
		}
	}
	sortResources(out)
	return out, nil
}

// etcdKeys lists every key under root (etcd's JSON gateway, no values).
func etcdKeys(ctx context.Context, c *cluster, root string) ([]string, error) {
	end := []byte(root)
	end[len(end)-1]++
	req, _ := json.Marshal(map[string]any{
		"key":       base64.StdEncoding.EncodeToString([]byte(root)),
		"range_end": base64.StdEncoding.EncodeToString(end),
		"keys_only": true,
	})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+"/v3/kv/range", bytes.NewReader(req))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("etcd range: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("etcd range: %d %s", resp.StatusCode, b)
	}
	var got struct {
		Kvs []struct {
			Key []byte `json:"key"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return nil, fmt.Errorf("etcd range: %w", err)
	}
	var keys []string
	for _, kv := range got.Kvs {
		keys = append(keys, string(kv.Key))
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("etcd has no key under %s: the apiserver wrote nothing?", root)
	}
	return keys, nil
}

// checkKeys compares the key prefixes with the keys the apiserver wrote
// (while starting, and seed's objects): each key must be under one
// resource's prefix.
func checkKeys(ctx context.Context, c *cluster, root string, resources []Resource) error {
	keys, err := etcdKeys(ctx, c, root)
	if err != nil {
		return err
	}
	prefixes := map[string]bool{}
	for _, r := range resources {
		if r.KeyPrefix != "" {
			prefixes[r.KeyPrefix] = true
		}
	}
	seen := map[string]bool{}
	var bad []string
	for _, key := range keys {
		key = strings.TrimPrefix(key, root)
		// The longest prefix the key is under (services/specs, not services).
		best := ""
		for p := range prefixes {
			if strings.HasPrefix(key, p+"/") && len(p) > len(best) {
				best = p
			}
		}
		if best == "" {
			// The apiserver's own bookkeeping, not a resource's objects:
			// the service IP and node port allocation maps, the
			// endpoint reconciler's and the peer proxy's leases.
			if strings.HasPrefix(key, "ranges/") || strings.HasPrefix(key, "masterleases/") ||
				strings.HasPrefix(key, "peerserverleases/") {
				continue
			}
			bad = append(bad, key)
			continue
		}
		seen[best] = true
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("etcd keys under no resource's prefix: %v", bad)
	}
	var under []string
	for p := range seen {
		under = append(under, p)
	}
	sort.Strings(under)
	logf("etcd keys checked: %d keys under %d prefixes (%s)", len(keys), len(seen), strings.Join(under, " "))
	return nil
}
