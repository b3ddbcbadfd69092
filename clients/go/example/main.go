// Command example drives a connector's lifecycle through connect.v1.ConnectService with the
// generated Go client: it creates a SequenceSource connector STOPPED with initial offsets,
// reads and alters its offsets, resumes it, watches its status until it runs and deletes it
// (see Run).
//
//	go run ./example --target localhost:8083
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
	"google.golang.org/grpc/credentials/insecure"

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
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *target == "" {
		fmt.Fprintln(os.Stderr, "error: --target: must not be empty")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runAgainst(ctx, *target, opts); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func runAgainst(ctx context.Context, target string, opts Options) error {
	conn, err := dial(target)
	if err != nil {
		return err
	}
	_, runErr := Run(ctx, connectv1.NewConnectServiceClient(conn), opts)
	return errors.Join(runErr, conn.Close())
}

// dial opens a plaintext channel to a worker (connect-grpc workers serve without TLS).
func dial(target string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("--target %q: %w", target, err)
	}
	return conn, nil
}
