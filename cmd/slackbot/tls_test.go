package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key to dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slackbot test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// With TLS_CERT_FILE and TLS_KEY_FILE, serve speaks HTTPS (TLS 1.2+) only.
func TestServeHTTPS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	fake, fakeSrv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace())
	rs := redistest.StartServer(t)
	routes := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(routes, []byte(testRoutes), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SLACK_BOT_TOKEN": fake.Token(), "SLACK_SIGNING_SECRET": testSecret, "SLACK_API_URL": slackfaketest.APIURL(fakeSrv),
		"REDIS_URL": rs.URL(), "ROUTES_FILE": routes, "ADDR": "127.0.0.1:0",
		"TLS_CERT_FILE": certFile, "TLS_KEY_FILE": keyFile,
	}
	ctx := t.Context()
	stdout := &syncBuffer{}
	done := make(chan error, 1)
	runCtx, cancel := context.WithCancel(ctx)
	go func() { done <- run(runCtx, []string{"serve"}, getenvOf(vars), nil, stdout, &syncBuffer{}) }()
	t.Cleanup(func() { cancel(); <-done })
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for base == "" {
		if m := listenRE.FindStringSubmatch(strings.Replace(stdout.String(), "https://", "http://", 1)); m != nil {
			base = strings.Replace(m[1], "http://", "https://", 1)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address printed: %s", stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /healthz over TLS: status %d, tls %v", resp.StatusCode, resp.TLS != nil)
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Get(base + "/healthz"); err == nil {
		t.Error("TLS 1.1 was accepted")
	}
	plain := strings.Replace(base, "https://", "http://", 1)
	if resp, err := http.Get(plain + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP was served")
		}
	}
}
