// Command example drives a connector's lifecycle through connect.v1.ConnectService with the
// generated Go client: it creates a SequenceSource connector STOPPED with initial offsets,
// reads and alters its offsets, previews its pipeline, patches its config on the etag it
// read and sees a stale etag refused, resumes it, watches its status until it runs, reads
// its topics and deletes it (see Run).
//
//	go run ./example --target localhost:8083
//
// Against a worker on grpcs:// (see Security): --tls or --cacert FILE, with --cert FILE and
// --key FILE for mutual TLS, --server-name NAME, and --token-file FILE (or
// $CONNECT_GRPC_TOKEN) for a bearer token, which is sent over TLS only unless
// --insecure-token is given.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"google.golang.org/grpc"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

func main() {
	os.Exit(runCommand(os.Args[1:]))
}

func runCommand(args []string) int {
	flags := flag.NewFlagSet("example", flag.ContinueOnError)
	target := flags.String("target", "localhost:8083", "the worker's gRPC address, host:port")
	opts := Options{Log: os.Stdout}
	flags.StringVar(&opts.Name, "name", "go-example", "the connector to create (it must not exist) and delete")
	flags.StringVar(&opts.Topic, "topic", "go-example", "the Kafka topic the connector writes to")
	flags.DurationVar(&opts.CallTimeout, "call-timeout", 30*time.Second, "the deadline of each call attempt")
	flags.DurationVar(&opts.WatchTimeout, "watch-timeout", 2*time.Minute,
		"how long to wait for the connector and its tasks to run")
	security := securityFlags(flags)
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *target == "" {
		fmt.Fprintln(os.Stderr, "error: --target: must not be empty")
		return 2
	}
	dialOptions, err := security.DialOptions()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runAgainst(ctx, *target, dialOptions, opts); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// securityFlags defines the TLS and token flags; the token may also come from tokenEnv.
func securityFlags(flags *flag.FlagSet) *Security {
	security := &Security{Token: os.Getenv(tokenEnv)}
	flags.BoolVar(&security.TLS, "tls", false,
		"use TLS, verifying the worker against the system's CA roots unless --cacert is given")
	flags.StringVar(&security.CAFile, "cacert", "",
		"PEM bundle of the CA(s) that signed the worker's certificate (implies --tls)")
	flags.StringVar(&security.CertFile, "cert", "", "PEM client certificate, for mutual TLS (with --key)")
	flags.StringVar(&security.KeyFile, "key", "", "PEM private key of --cert")
	flags.StringVar(&security.ServerName, "server-name", "",
		"verify the worker's certificate against this name instead of the target's host")
	flags.StringVar(&security.TokenFile, "token-file", "",
		"file holding the bearer token to send (else $"+tokenEnv+")")
	flags.BoolVar(&security.InsecureToken, "insecure-token", false,
		"send the token even without TLS (on a network you trust only)")
	return security
}

func runAgainst(ctx context.Context, target string, dialOptions []grpc.DialOption, opts Options) error {
	conn, err := dial(target, dialOptions)
	if err != nil {
		return err
	}
	_, runErr := Run(ctx, connectv1.NewConnectServiceClient(conn), opts)
	return errors.Join(runErr, conn.Close())
}

// dial opens a channel to a worker, with the credentials of Security.DialOptions.
func dial(target string, dialOptions []grpc.DialOption) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(target, dialOptions...)
	if err != nil {
		return nil, fmt.Errorf("--target %q: %w", target, err)
	}
	return conn, nil
}
