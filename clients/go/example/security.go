package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// tokenEnv names the environment variable that may hold a bearer token (a token on the
// command line would be visible to every user of the machine).
const tokenEnv = "CONNECT_GRPC_TOKEN"

// Security says how to reach a worker besides its address: TLS (a worker listening on
// grpcs://), a client certificate (a worker with listeners.https.ssl.client.auth=required)
// and a bearer token (a worker with auth.tokens.file). The zero value is plaintext.
type Security struct {
	// TLS turns TLS on even with none of the files below: the system's roots verify the
	// worker.
	TLS bool
	// CAFile is the PEM bundle of the CA(s) that signed the worker's certificate.
	CAFile string
	// CertFile and KeyFile are the client certificate (chain) and its private key, in PEM.
	CertFile string
	KeyFile  string
	// ServerName is the name the worker's certificate must carry, when it is not the host of
	// the target (e.g. when dialling an IP address).
	ServerName string
	// TokenFile holds the bearer token; Token is one given directly (from tokenEnv), used
	// when TokenFile is empty.
	TokenFile string
	Token     string
	// InsecureToken lets the token go without TLS, readable by anyone on the network path;
	// without it a token needs TLS.
	InsecureToken bool
}

// usesTLS says whether any TLS setting is given.
func (s Security) usesTLS() bool {
	return s.TLS || s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.ServerName != ""
}

// DialOptions returns the transport credentials and, with a token, the per-RPC credentials
// that send it. Every file is read here, so a bad one is an error naming its flag before
// any connection is attempted.
func (s Security) DialOptions() ([]grpc.DialOption, error) {
	transport := insecure.NewCredentials()
	if s.usesTLS() {
		config, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		transport = credentials.NewTLS(config)
	}
	options := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
	token, source, err := s.token()
	if err != nil || token == "" {
		return options, err
	}
	if !s.usesTLS() && !s.InsecureToken {
		return nil, fmt.Errorf("%s: a bearer token is sent over TLS only: add --tls or --cacert "+
			"(or --insecure-token, on a network you trust)", source)
	}
	bearer := bearerToken{header: "Bearer " + token, requireTLS: !s.InsecureToken}
	return append(options, grpc.WithPerRPCCredentials(bearer)), nil
}

func (s Security) tlsConfig() (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert: no PEM certificate in %s", s.CAFile)
		}
		config.RootCAs = pool
	}
	switch {
	case s.CertFile == "" && s.KeyFile == "":
		return config, nil
	case s.KeyFile == "":
		return nil, errors.New("--cert: a client certificate needs both --cert and --key; --key is missing")
	case s.CertFile == "":
		return nil, errors.New("--key: a client certificate needs both --cert and --key; --cert is missing")
	}
	pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--cert and --key: %w", err)
	}
	config.Certificates = []tls.Certificate{pair}
	return config, nil
}

// token returns the bearer token and where it came from (--token-file, else tokenEnv), or
// "" when there is none.
func (s Security) token() (token, source string, err error) {
	if s.TokenFile != "" {
		content, err := os.ReadFile(s.TokenFile)
		if err != nil {
			return "", "", fmt.Errorf("--token-file: %w", err)
		}
		return checkToken(strings.TrimSpace(string(content)), "--token-file")
	}
	if token := strings.TrimSpace(s.Token); token != "" {
		return checkToken(token, "$"+tokenEnv)
	}
	return "", "", nil
}

// checkToken refuses what an HTTP/2 header cannot carry; its errors never show the token.
func checkToken(token, source string) (string, string, error) {
	if token == "" {
		return "", "", fmt.Errorf("%s: empty", source)
	}
	for _, c := range []byte(token) {
		if c < 0x21 || c > 0x7e {
			return "", "", fmt.Errorf("%s: a token is printable ASCII with no spaces", source)
		}
	}
	return token, source, nil
}

// bearerToken adds "authorization: Bearer <token>" to every call.
type bearerToken struct {
	header     string
	requireTLS bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.header}, nil
}

// RequireTransportSecurity makes gRPC itself refuse to send the token over a plaintext
// connection unless the user allowed it (InsecureToken).
func (b bearerToken) RequireTransportSecurity() bool {
	return b.requireTLS
}
