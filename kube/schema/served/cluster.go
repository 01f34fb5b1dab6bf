package main

// The real servers this generator reads: etcd and kube-apiserver on
// loopback ports, with the minimal setup of testkit/client-go's cluster
// (a static token for an admin in system:masters, a service-account key,
// RBAC), in a temporary directory removed at the end.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

const adminToken = "servedgen-admin-token"

// cluster is etcd and the apiserver, started by start and ended by stop.
type cluster struct {
	dir     string
	etcdURL string
	apiURL  string
	client  *http.Client
	procs   []*proc
}

// proc is one child process, its output in a log file shown on failure.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *cluster) startProc(name, bin string, args ...string) (*proc, error) {
	log := filepath.Join(c.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, ended with it if this generator dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

// tail is the end of a process's log, for an error message.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitReady polls url until it answers 200, the process exits or the time
// is up.
func waitReady(ctx context.Context, p *proc, client *http.Client, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting:\n%s", p.name, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("%s: interrupted while starting", p.name)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready at %s after %s (last: %s):\n%s", p.name, url, limit, last, p.tail())
}

func startCluster(ctx context.Context, etcdBin, apiserverBin string) (*cluster, error) {
	dir, err := os.MkdirTemp("", "servedgen-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	if err := c.start(ctx, etcdBin, apiserverBin); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) start(ctx context.Context, etcdBin, apiserverBin string) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := c.startProc("etcd", etcdBin,
		"--name", "servedgen",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", c.etcdURL, "--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "servedgen="+peerURL,
		"--log-level", "warn")
	if err != nil {
		return err
	}
	if err := waitReady(ctx, etcd, http.DefaultClient, c.etcdURL+"/health", 30*time.Second); err != nil {
		return err
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saKey := filepath.Join(c.dir, "sa.key")
	if err := os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	tokens := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return err
	}
	apiPort, err := freePort()
	if err != nil {
		return err
	}
	c.apiURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	// Only what the apiserver needs to start: every API, version and
	// admission plugin stays as it is by default.
	api, err := c.startProc("kube-apiserver", apiserverBin,
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
		"--endpoint-reconciler-type=none")
	if err != nil {
		return err
	}
	c.client = &http.Client{
		Timeout: 60 * time.Second,
		Transport: &authTransport{base: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // its self-signed serving certificate, on loopback
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 32,
		}},
	}
	return waitReady(ctx, api, c.client, c.apiURL+"/readyz", 3*time.Minute)
}

// authTransport adds the admin's bearer token.
type authTransport struct{ base http.RoundTripper }

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+adminToken)
	return t.base.RoundTrip(r)
}

// stop ends the processes (apiserver first) and removes the directory.
func (c *cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	os.RemoveAll(c.dir)
}
