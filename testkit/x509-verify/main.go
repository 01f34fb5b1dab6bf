// Command x509-verify prints Go's verdict on client certificate chains,
// checked as the kube-apiserver's x509 authenticator checks them
// (k8s.io/apiserver/pkg/authentication/request/x509: x509.Verify with
// Roots the client CA file, Intermediates the client's other
// certificates, KeyUsages [ClientAuth]).
//
// It reads JSON lines on stdin, each {"roots": PEM, "chain": PEM, "now":
// Unix seconds}, and prints one line per case: "ok", or "refused: " and
// Go's error. A chain certificate Go cannot parse is refused (Go's TLS
// stack fails the handshake); a CA file it cannot parse is an error
// line, "bad roots: ...".
package main

import (
	"bufio"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"time"
)

type verifyCase struct {
	Roots string `json:"roots"`
	Chain string `json:"chain"`
	Now   int64  `json:"now"`
}

func certs(text string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(text)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out, nil
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func verdict(c verifyCase) string {
	// As k8s.io/client-go/util/cert.NewPool reads the CA file.
	roots, err := certs(c.Roots)
	if err != nil || len(roots) == 0 {
		return fmt.Sprintf("bad roots: %v", err)
	}
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	chain, err := certs(c.Chain)
	if err != nil {
		return "refused: " + err.Error()
	}
	if len(chain) == 0 {
		return "refused: no certificate"
	}
	opts := x509.VerifyOptions{
		Roots:       pool,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime: time.Unix(c.Now, 0),
	}
	if len(chain) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, i := range chain[1:] {
			opts.Intermediates.AddCert(i)
		}
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return "refused: " + err.Error()
	}
	return "ok"
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var c verifyCase
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, "bad input:", err)
			os.Exit(2)
		}
		fmt.Fprintln(out, verdict(c))
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "reading:", err)
		os.Exit(2)
	}
}
