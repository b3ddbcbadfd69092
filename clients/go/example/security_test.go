package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

const testToken = "go-test-token-0123456789abcdef"

// testPKI is a CA made for one test, in a temporary directory, and the certificates it
// issues (ECDSA P-256, valid for an hour, for server and client authentication).
type testPKI struct {
	t       *testing.T
	dir     string
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM string
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	key := newKey(t)
	template := certificateTemplate(name)
	template.IsCA, template.BasicConstraintsValid = true, true
	template.KeyUsage = x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(crand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{t: t, dir: t.TempDir(), cert: cert, key: key}
	p.certPEM = p.write(name+".pem", "CERTIFICATE", der)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func certificateTemplate(commonName string) *x509.Certificate {
	serial, _ := crand.Int(crand.Reader, big.NewInt(1<<62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"connect-grpc go tests"}},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
	}
}

// issue makes <name>.pem and <name>.key for commonName, valid for hosts (DNS names or IP
// addresses), and returns their paths.
func (p *testPKI) issue(name, commonName string, hosts ...string) (certFile, keyFile string) {
	p.t.Helper()
	key := newKey(p.t)
	template := certificateTemplate(commonName)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(crand.Reader, template, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name+".pem", "CERTIFICATE", der), p.write(name+".key", "PRIVATE KEY", keyDER)
}

func (p *testPKI) write(name, blockType string, der []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// recordingServer answers ListPlugins and records each caller's authorization metadata and
// client certificate's common name ("" without one).
type recordingServer struct {
	connectv1.UnimplementedConnectServiceServer
	mu      sync.Mutex
	callers []string
}

func (s *recordingServer) ListPlugins(
	ctx context.Context, _ *connectv1.ListPluginsRequest,
) (*connectv1.ListPluginsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	commonName := ""
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
			commonName = info.State.PeerCertificates[0].Subject.CommonName
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callers = append(s.callers, strings.Join(md.Get("authorization"), ",")+" | "+commonName)
	return &connectv1.ListPluginsResponse{}, nil
}

func (s *recordingServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.callers...)
}

// serveOnLoopback runs server on a free loopback port, over TLS with config (nil:
// plaintext), and returns its address.
func serveOnLoopback(t *testing.T, server connectv1.ConnectServiceServer, config *tls.Config) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var options []grpc.ServerOption
	if config != nil {
		options = append(options, grpc.Creds(credentials.NewTLS(config)))
	}
	grpcServer := grpc.NewServer(options...)
	connectv1.RegisterConnectServiceServer(grpcServer, server)
	go func() { _ = grpcServer.Serve(listener) }()
	t.Cleanup(grpcServer.Stop)
	return listener.Addr().String()
}

// tlsWorker serves a recordingServer with a certificate for hosts, signed by ca, asking
// for (and verifying against ca) a client certificate if the client has one.
func tlsWorker(t *testing.T, ca *testPKI, hosts ...string) (*recordingServer, string) {
	t.Helper()
	certFile, keyFile := ca.issue("worker", "worker", hosts...)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(ca.cert)
	server := &recordingServer{}
	address := serveOnLoopback(t, server, &tls.Config{
		MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		ClientCAs: clients, ClientAuth: tls.VerifyClientCertIfGiven,
	})
	return server, address
}

// listPlugins dials address with security's options and makes one call.
func listPlugins(t *testing.T, address string, security Security) error {
	t.Helper()
	dialOptions, err := security.DialOptions()
	if err != nil {
		t.Fatalf("DialOptions: %v", err)
	}
	conn, err := dial(address, dialOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = connectv1.NewConnectServiceClient(conn).ListPlugins(ctx, &connectv1.ListPluginsRequest{})
	return err
}

func TestMutualTLSAndATokenReachTheWorker(t *testing.T) {
	ca := newTestPKI(t, "test CA")
	server, address := tlsWorker(t, ca, "127.0.0.1")
	certFile, keyFile := ca.issue("alice", "alice")
	security := Security{
		CAFile: ca.certPEM, CertFile: certFile, KeyFile: keyFile,
		TokenFile: writeFile(t, "ops.token", testToken+"\n"),
	}

	if err := listPlugins(t, address, security); err != nil {
		t.Fatalf("ListPlugins over mutual TLS: %v", err)
	}
	if err := listPlugins(t, address, Security{CAFile: ca.certPEM, Token: " " + testToken}); err != nil {
		t.Fatalf("ListPlugins over TLS, token from the environment: %v", err)
	}

	want := []string{"Bearer " + testToken + " | alice", "Bearer " + testToken + " | "}
	if got := server.seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the worker saw %q, want %q", got, want)
	}
}

func TestAnUntrustedWorkerCertificateIsUnavailable(t *testing.T) {
	server, address := tlsWorker(t, newTestPKI(t, "worker CA"), "127.0.0.1")
	other := newTestPKI(t, "other CA")

	err := listPlugins(t, address, Security{CAFile: other.certPEM, TokenFile: writeFile(t, "t", testToken)})

	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want UNAVAILABLE (a failed handshake)", err)
	}
	if len(server.seen()) != 0 {
		t.Errorf("the worker answered %d calls, want none (and no token sent)", len(server.seen()))
	}
}

func TestServerNameIsWhatTheCertificateIsCheckedAgainst(t *testing.T) {
	ca := newTestPKI(t, "test CA")
	_, address := tlsWorker(t, ca, "connect.example.com")

	if err := listPlugins(t, address, Security{CAFile: ca.certPEM}); status.Code(err) != codes.Unavailable {
		t.Fatalf("without --server-name: %v, want UNAVAILABLE (127.0.0.1 is not in the certificate)", err)
	}
	security := Security{CAFile: ca.certPEM, ServerName: "connect.example.com"}
	if err := listPlugins(t, address, security); err != nil {
		t.Fatalf("with --server-name: %v", err)
	}
}

func TestATokenGoesWithoutTLSOnlyWithInsecureToken(t *testing.T) {
	server := &recordingServer{}
	address := serveOnLoopback(t, server, nil)
	tokenFile := writeFile(t, "t", testToken)

	_, err := Security{TokenFile: tokenFile}.DialOptions()
	want := "--token-file: a bearer token is sent over TLS only"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("DialOptions: %v, want %q...", err, want)
	}
	_, err = Security{Token: testToken}.DialOptions()
	if err == nil || !strings.HasPrefix(err.Error(), "$"+tokenEnv+": a bearer token is sent over TLS only") {
		t.Fatalf("DialOptions with the token from the environment: %v", err)
	}

	if err := listPlugins(t, address, Security{TokenFile: tokenFile, InsecureToken: true}); err != nil {
		t.Fatalf("ListPlugins with --insecure-token: %v", err)
	}
	if got := server.seen(); len(got) != 1 || got[0] != "Bearer "+testToken+" | " {
		t.Errorf("the worker saw %q, want the token", got)
	}
}

func TestBadSettingsAreErrorsNamingTheFlag(t *testing.T) {
	ca := newTestPKI(t, "test CA")
	certFile, keyFile := ca.issue("alice", "alice")
	notPEM := writeFile(t, "plain.txt", "not a certificate")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	cases := map[string]struct {
		security Security
		want     string
	}{
		"missing CA":     {Security{CAFile: missing}, "--cacert: open " + missing},
		"CA not PEM":     {Security{CAFile: notPEM}, "--cacert: no PEM certificate in " + notPEM},
		"cert, no key":   {Security{CertFile: certFile}, "--cert: a client certificate needs both"},
		"key, no cert":   {Security{KeyFile: keyFile}, "--key: a client certificate needs both"},
		"key not PEM":    {Security{CertFile: certFile, KeyFile: notPEM}, "--cert and --key: "},
		"missing token":  {Security{TLS: true, TokenFile: missing}, "--token-file: open " + missing},
		"empty token":    {Security{TLS: true, TokenFile: writeFile(t, "e", " \n")}, "--token-file: empty"},
		"token, spaces":  {Security{TLS: true, Token: "secret " + testToken}, "$" + tokenEnv + ": a token is printable ASCII"},
		"file, non-text": {Security{TLS: true, TokenFile: writeFile(t, "b", "secret\x01"+testToken)}, "--token-file: a token is printable ASCII"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.security.DialOptions()
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("DialOptions: %v, want %q...", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

func TestTheExampleRefusesBadSecurityFlagsWithExit2(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	if code := runCommand([]string{"--target", "127.0.0.1:9", "--cacert", missing}); code != 2 {
		t.Errorf("runCommand with a missing --cacert = %d, want 2", code)
	}
	tokenFile := writeFile(t, "t", testToken)
	if code := runCommand([]string{"--target", "127.0.0.1:9", "--token-file", tokenFile}); code != 2 {
		t.Errorf("runCommand with a token and no TLS = %d, want 2", code)
	}
}
