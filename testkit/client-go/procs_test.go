package clientgo

// Processes the test starts (etcd, kube-apiserver, herald-server): free
// ports, logs kept in files (their tails printed when the test fails), and a
// cleanup that ends each process group even when the test fails.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testContext ends 30 s before go test's -timeout would panic: the test
// ends with a message, and its cleanups run (Pdeathsig ends the processes
// either way). The caller defers cancel.
func testContext(t *testing.T) (context.Context, context.CancelFunc) {
	if dl, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), dl.Add(-30*time.Second))
	}
	return context.WithCancel(context.Background())
}

// binaries the test runs, from the environment.
type binaries struct {
	etcd, apiserver, herald, kubectl string
}

// requireBinaries reads HERALD_ETCD, HERALD_KUBE_APISERVER, HERALD_SERVER and
// finds kubectl on PATH. A missing one fails the test (never a skip: a
// skipped differential suite would read as a pass in CI).
func requireBinaries(t *testing.T) binaries {
	t.Helper()
	var missing []string
	fromEnv := func(name, how string) string {
		p := os.Getenv(name)
		if p == "" {
			missing = append(missing, fmt.Sprintf("%s is not set (%s)", name, how))
			return ""
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, fmt.Sprintf("%s=%s is not an executable file (%v)", name, p, err))
		}
		return p
	}
	b := binaries{
		etcd:      fromEnv("HERALD_ETCD", `eval "$(scripts/ensure-etcd.sh)"`),
		apiserver: fromEnv("HERALD_KUBE_APISERVER", `eval "$(scripts/ensure-kube-apiserver.sh)"`),
		herald:    fromEnv("HERALD_SERVER", "cargo build --release -p herald-server --bin herald-server; export HERALD_SERVER=<target>/release/herald-server"),
	}
	if p, err := exec.LookPath("kubectl"); err != nil {
		missing = append(missing, "kubectl is not on PATH")
	} else {
		b.kubectl = p
	}
	if len(missing) > 0 {
		t.Fatalf("\n%s\nFAILED: the differential test cannot run without its binaries:\n  - %s\n%s\n(scripts/test-real-cluster.sh gets them all)",
			strings.Repeat("!", 72), strings.Join(missing, "\n  - "), strings.Repeat("!", 72))
	}
	return b
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedFile is a log file several goroutines (the process's stdout and
// stderr copiers) write to.
type lockedFile struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lockedFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// proc is a process the test started.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // the exit, once done is closed
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// procs is every process of one test run, with the directory of their logs.
type procs struct {
	t      *testing.T
	logDir string
	mu     sync.Mutex
	list   []*proc
}

// newProcs registers the cleanup that stops every process started through
// it (in reverse order) and, when the test failed, prints the tail of each
// log and keeps the log directory.
func newProcs(t *testing.T) *procs {
	dir, err := os.MkdirTemp("", "herald-diff-logs-")
	if err != nil {
		t.Fatalf("log dir: %v", err)
	}
	ps := &procs{t: t, logDir: dir}
	t.Cleanup(func() {
		ps.mu.Lock()
		list := append([]*proc(nil), ps.list...)
		ps.mu.Unlock()
		for i := len(list) - 1; i >= 0; i-- {
			stop(list[i])
		}
		if t.Failed() {
			for _, p := range list {
				t.Logf("\n===== %s log (last 120 lines of %s) =====\n%s", p.name, p.logPath, tail(p.logPath, 120))
			}
			t.Logf("the processes' whole logs are kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	return ps
}

// start runs a process in its own process group, its output into
// <logDir>/<name>.log. The kernel kills it if the test binary dies first
// (Pdeathsig), so a test killed by -timeout leaves nothing behind.
func (ps *procs) start(name, bin string, args ...string) *proc {
	ps.t.Helper()
	logPath := filepath.Join(ps.logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		ps.t.Fatalf("%s: log file: %v", name, err)
	}
	lf := &lockedFile{f: f}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = lf
	cmd.Stderr = lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(lf, "$ %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		ps.t.Fatalf("start %s (%s): %v", name, bin, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.mu.Lock()
		fmt.Fprintf(f, "\n[process ended: %v]\n", p.err)
		f.Close()
		lf.mu.Unlock()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	ps.t.Logf("started %s (pid %d), log %s", name, cmd.Process.Pid, logPath)
	return p
}

// stop ends a process's group: SIGTERM, then SIGKILL after 10 s.
func stop(p *proc) {
	if done, _ := p.exited(); done {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitHTTP polls url until it answers 200 (with client), failing the test
// when the process ends first or the context expires.
func waitHTTP(ctx context.Context, t *testing.T, p *proc, client *http.Client, url string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	start := time.Now()
	var last string
	for {
		if done, err := p.exited(); done {
			t.Fatalf("%s ended before %s answered 200: %v\n%s", p.name, url, err, tail(p.logPath, 60))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("%s ready after %.1f s (%s)", p.name, time.Since(start).Seconds(), url)
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(body.String()))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %s did not answer 200 within %s; last answer: %s\n%s", p.name, url, within, last, tail(p.logPath, 60))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
