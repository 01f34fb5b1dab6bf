package clientgo

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// TestAgainstKubeAPIServer is the differential test: one cluster (etcd, the
// real kube-apiserver, herald-server), the corpus and churn written through
// the apiserver, then each comparison as a subtest. Every difference found
// is reported (t.Errorf, grouped) and listed again at the end.
func TestAgainstKubeAPIServer(t *testing.T) {
	began := time.Now()
	bins := requireBinaries(t)
	ctx, cancel := testContext(t)
	defer cancel()
	c := startCluster(ctx, t, bins)
	t.Logf("etcd %s, kube-apiserver %s, herald-server %s reading %s (secrets encrypted: %v); up in %.1f s",
		c.etcdURL, c.apiURL, c.heraldURL, c.upstream, c.encrypted, time.Since(began).Seconds())

	applyCorpus(ctx, t, c)
	churn(ctx, t, kubernetes.NewForConfigOrDie(c.apiConfig()))
	if c.encrypted {
		c.requireEncrypted(ctx, t, "/registry/secrets/diff/creds")
		c.requireEncrypted(ctx, t, "/registry/secrets/churn-a/s-0")
	}

	d := newDifferences()
	res := discoverResources(ctx, t, c, d)
	d.report(t, 0)
	rv := waitCaughtUp(ctx, t, c, res)
	c.alive(t)

	sections := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"json", func(t *testing.T) { testJSON(ctx, t, c, res, d) }},
		{"protobuf", func(t *testing.T) { testProtobuf(ctx, t, c, res, d) }},
		{"negotiation", func(t *testing.T) { testNegotiation(ctx, t, c, res, d) }},
		{"tables", func(t *testing.T) { testTables(ctx, t, c, res, d) }},
		{"pager", func(t *testing.T) { testPager(ctx, t, c, res, d) }},
		// Last: these write more churn.
		{"informers", func(t *testing.T) { testInformers(ctx, t, c, d) }},
		{"watch", func(t *testing.T) { testWatch(ctx, t, c, d) }},
		// After the churn: reads at the version the comparisons began at.
		{"history", func(t *testing.T) { testHistory(ctx, t, c, res, rv, d) }},
	}
	for _, s := range sections {
		t.Run(s.name, s.run)
		c.alive(t)
	}

	if d.count() > 0 {
		var b strings.Builder
		for _, k := range d.order {
			b.WriteString("\n")
			b.WriteString(d.m[k].String())
		}
		t.Errorf("%d difference(s) between Herald and the kube-apiserver:%s", d.count(), b.String())
	}
	t.Logf("the differential test took %.1f s", time.Since(began).Seconds())
}
