package clientgo

// The cluster under test: an etcd of its own, the real kube-apiserver on it
// (token auth, RBAC, secrets encrypted with aescbc when Herald can read
// them), and herald-server reading the same etcd.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

const adminToken = "admin-token"

// cluster is what the test runs against.
type cluster struct {
	bins       binaries
	dir        string // the run's files (t.TempDir)
	etcdURL    string
	apiURL     string // https://127.0.0.1:<port>
	heraldURL  string // http://127.0.0.1:<port>
	kubeconfig string // the apiserver's, admin token
	emptyKube  string // a kubeconfig with nothing in it, for kubectl --server=Herald
	kubeCache  string // kubectl's discovery cache (one for the run, not ~/.kube)
	encrypted  bool   // secrets are stored encrypted (aescbc)
	upstream   string // what herald-server reads: "etcd" or "apiserver" (HERALD_DIFF_UPSTREAM)
	encryption string // the apiserver's encryption configuration (Herald reads it too)
	procs      *procs
	apiProc    *proc
	heraldProc *proc
}

// apiConfig is a client-go config for the apiserver (admin), in JSON.
func (c *cluster) apiConfig() *rest.Config {
	return &rest.Config{
		Host:            c.apiURL,
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             1000,
		Burst:           2000,
		ContentConfig:   jsonContent(),
		WarningHandler:  rest.NoWarnings{},
	}
}

// heraldConfig is a client-go config for herald-server (plain HTTP, no
// credentials), in JSON.
func (c *cluster) heraldConfig() *rest.Config {
	return &rest.Config{Host: c.heraldURL, QPS: 1000, Burst: 2000, ContentConfig: jsonContent(), WarningHandler: rest.NoWarnings{}}
}

// The content types of the two encodings. client-go 0.37's typed clients
// ask for protobuf by default when the config names no content type, so
// JSON is named explicitly.
const (
	jsonType  = "application/json"
	protoType = "application/vnd.kubernetes.protobuf"
)

func jsonContent() rest.ContentConfig {
	return rest.ContentConfig{ContentType: jsonType, AcceptContentTypes: jsonType}
}

func protoContent() rest.ContentConfig {
	return rest.ContentConfig{ContentType: protoType, AcceptContentTypes: protoType}
}

// withContent returns a copy of cfg with another content configuration.
func withContent(cfg *rest.Config, cc rest.ContentConfig) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentConfig = cc
	return out
}

// heraldHasFlag reports whether `herald-server --help` lists a flag.
func heraldHasFlag(t *testing.T, bin, flag string) bool {
	t.Helper()
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	return strings.Contains(string(out), flag)
}

// encryptionWanted decides whether secrets are encrypted at rest:
// HERALD_DIFF_ENCRYPTION=1 forces it on (herald-server then gets
// --encryption-provider-config too, and fails to start if it lacks the
// flag), =0 forces it off; unset, it is on when herald-server --help lists
// --encryption-provider-config.
func encryptionWanted(t *testing.T, herald string) bool {
	switch v := os.Getenv("HERALD_DIFF_ENCRYPTION"); v {
	case "1", "true":
		return true
	case "0", "false":
		return false
	case "":
		has := heraldHasFlag(t, herald, "--encryption-provider-config")
		if !has {
			t.Logf("NOTE: herald-server --help has no --encryption-provider-config: secrets are stored unencrypted " +
				"(HERALD_DIFF_ENCRYPTION=1 encrypts them with aescbc and passes the file to herald-server)")
		}
		return has
	default:
		t.Fatalf("HERALD_DIFF_ENCRYPTION=%q: want 1 or 0 (or unset)", v)
		return false
	}
}

// startCluster starts etcd, the kube-apiserver and herald-server and waits
// until each is ready.
func startCluster(ctx context.Context, t *testing.T, bins binaries) *cluster {
	t.Helper()
	c := &cluster{bins: bins, dir: t.TempDir()}
	c.procs = newProcs(t)
	c.encrypted = encryptionWanted(t, bins.herald)
	c.upstream = os.Getenv("HERALD_DIFF_UPSTREAM")
	switch c.upstream {
	case "":
		c.upstream = "etcd"
	case "etcd", "apiserver":
	default:
		t.Fatalf("HERALD_DIFF_UPSTREAM=%q: etcd or apiserver", c.upstream)
	}

	// etcd.
	clientPort, peerPort := freePort(t), freePort(t)
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd := c.procs.start("etcd", bins.etcd,
		"--name", "herald-diff",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", c.etcdURL, "--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "herald-diff="+peerURL,
		"--log-level", "warn")
	waitHTTP(ctx, t, etcd, http.DefaultClient, c.etcdURL+"/health", 30*time.Second)

	// The apiserver's files: the service account key, the token file, the
	// encryption configuration.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa key: %v", err)
	}
	saKey := filepath.Join(c.dir, "sa.key")
	writeFile(t, saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	tokens := filepath.Join(c.dir, "tokens.csv")
	writeFile(t, tokens, []byte(adminToken+",admin,admin-uid,system:masters\n"))
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatalf("random key: %v", err)
	}
	encryption := filepath.Join(c.dir, "encryption.yaml")
	writeFile(t, encryption, []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: %s
  - identity: {}
`, base64.StdEncoding.EncodeToString(secret))))

	apiPort := freePort(t)
	c.apiURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	args := []string{
		"--etcd-servers", c.etcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir", filepath.Join(c.dir, "certs"),
		"--service-account-key-file", saKey,
		"--service-account-signing-key-file", saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--token-auth-file", tokens,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
	}
	if c.encrypted {
		args = append(args, "--encryption-provider-config", encryption)
	}
	c.apiProc = c.procs.start("kube-apiserver", bins.apiserver, args...)
	apiHTTP, err := rest.HTTPClientFor(c.apiConfig())
	if err != nil {
		t.Fatalf("apiserver http client: %v", err)
	}
	waitHTTP(ctx, t, c.apiProc, apiHTTP, c.apiURL+"/readyz", 3*time.Minute)

	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	writeFile(t, c.kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: real
  cluster: {server: "%s", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %s}
contexts:
- name: real
  context: {cluster: real, user: admin}
current-context: real
`, c.apiURL, adminToken)))
	c.emptyKube = filepath.Join(c.dir, "empty-kubeconfig")
	writeFile(t, c.emptyKube, []byte("apiVersion: v1\nkind: Config\n"))
	c.kubeCache = filepath.Join(c.dir, "kube-cache")

	// herald-server on the same etcd, or in front of the apiserver.
	heraldPort := freePort(t)
	c.heraldURL = fmt.Sprintf("http://127.0.0.1:%d", heraldPort)
	c.encryption = encryption
	hargs := c.heraldArgs(t, heraldPort, "all")
	c.heraldProc = c.procs.start("herald-server", bins.herald, hargs...)
	waitHTTP(ctx, t, c.heraldProc, http.DefaultClient, c.heraldURL+"/readyz", 2*time.Minute)
	return c
}

// heraldArgs is herald-server's command line on the cluster's upstream,
// serving resources ("all", or a list) on 127.0.0.1:port.
func (c *cluster) heraldArgs(t *testing.T, port int, resources string) []string {
	t.Helper()
	hargs := []string{
		"--resources", resources,
		"--listen", fmt.Sprintf("127.0.0.1:%d", port),
	}
	switch c.upstream {
	case "etcd":
		hargs = append(hargs, "--etcd", c.etcdURL)
		if c.encrypted {
			hargs = append(hargs, "--encryption-provider-config", c.encryption)
		}
	case "apiserver":
		// Herald's own kubeconfig: the apiserver's serving certificate
		// verified against the CA it generated (no
		// insecure-skip-tls-verify), a bearer token.
		herald := filepath.Join(c.dir, "herald-kubeconfig")
		writeFile(t, herald, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: real
  cluster: {server: "%s", certificate-authority: "%s"}
users:
- name: herald
  user: {token: %s}
contexts:
- name: real
  context: {cluster: real, user: herald}
current-context: real
`, c.apiURL, filepath.Join(c.dir, "certs", "apiserver.crt"), adminToken)))
		hargs = append(hargs, "--kubeconfig", herald)
	}
	return hargs
}

// alive fails the test when one of the servers has ended.
func (c *cluster) alive(t *testing.T) {
	t.Helper()
	for _, p := range []*proc{c.apiProc, c.heraldProc} {
		if done, err := p.exited(); done {
			t.Fatalf("%s has ended: %v\n%s", p.name, err, tail(p.logPath, 80))
		}
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// kubectlCmd runs kubectl against the apiserver (herald false) or Herald
// (true), returning stdout, stderr and the exit error.
func (c *cluster) kubectl(ctx context.Context, herald bool, args ...string) (string, string, error) {
	var full []string
	if herald {
		full = append(full, "--kubeconfig", c.emptyKube, "--server", c.heraldURL)
	} else {
		full = append(full, "--kubeconfig", c.kubeconfig)
	}
	full = append(full, "--cache-dir", c.kubeCache)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, c.bins.kubectl, full...)
	cmd.Env = append(os.Environ(), "HOME="+c.dir, "KUBECONFIG=")
	var stdout, stderr strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// requireEncrypted checks, through etcd's JSON gateway, that a secret the
// corpus wrote is stored encrypted with aescbc key1 (what Herald must
// decrypt to serve it).
func (c *cluster) requireEncrypted(ctx context.Context, t *testing.T, key string) {
	t.Helper()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	body := fmt.Sprintf(`{"key":%q}`, b64(key))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+"/v3/kv/range", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("etcd range %s: %v", key, err)
	}
	defer resp.Body.Close()
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Kvs) != 1 {
		t.Fatalf("etcd range %s: %v (%d values)", key, err, len(out.Kvs))
	}
	v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		t.Fatalf("etcd range %s: %v", key, err)
	}
	const prefix = "k8s:enc:aescbc:v1:key1:"
	if !strings.HasPrefix(string(v), prefix) {
		t.Fatalf("%s is not stored encrypted (want the prefix %q): %q...", key, prefix, v[:min(len(v), 40)])
	}
	t.Logf("%s is stored encrypted (%s..., %d bytes)", key, prefix, len(v))
}
