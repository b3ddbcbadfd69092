package main

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

// flakyServer answers DeleteConnector with the codes of failures in turn, then with
// afterwards (success if OK), and records the request_id of every call. Its UNAVAILABLE
// answers carry a RetryInfo, as the worker's do.
type flakyServer struct {
	connectv1.UnimplementedConnectServiceServer
	failures   []codes.Code
	afterwards codes.Code
	mu         sync.Mutex
	requestIDs []string
}

func (s *flakyServer) DeleteConnector(
	_ context.Context, request *connectv1.DeleteConnectorRequest,
) (*connectv1.DeleteConnectorResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestIDs = append(s.requestIDs, request.GetRequestId())
	code := s.afterwards
	if len(s.requestIDs) <= len(s.failures) {
		code = s.failures[len(s.requestIDs)-1]
	}
	if code == codes.OK {
		return &connectv1.DeleteConnectorResponse{}, nil
	}
	st := status.New(code, "not now")
	if code == codes.Unavailable {
		hint := &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Millisecond)}
		withHint, err := st.WithDetails(hint)
		if err != nil {
			return nil, err
		}
		st = withHint
	}
	return nil, st.Err()
}

func (s *flakyServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requestIDs...)
}

// serve runs server over an in-memory gRPC connection and returns a client of it.
func serve(t *testing.T, server connectv1.ConnectServiceServer) connectv1.ConnectServiceClient {
	t.Helper()
	listener := bufconn.Listen(1 << 20)
	grpcServer := grpc.NewServer()
	connectv1.RegisterConnectServiceServer(grpcServer, server)
	go func() { _ = grpcServer.Serve(listener) }()
	t.Cleanup(grpcServer.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return listener.DialContext(ctx)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return connectv1.NewConnectServiceClient(conn)
}

var fastBackoff = backoff{initial: time.Millisecond, maximum: 4 * time.Millisecond}

func deleteWithRetry(
	ctx context.Context, client connectv1.ConnectServiceClient, b backoff, requestID string,
) error {
	request := &connectv1.DeleteConnectorRequest{Name: "c", RequestId: requestID}
	_, err := callWithRetry(ctx, time.Second, b,
		func(ctx context.Context) (*connectv1.DeleteConnectorResponse, error) {
			return client.DeleteConnector(ctx, request)
		})
	return err
}

func TestRetryResendsTheSameRequestID(t *testing.T) {
	server := &flakyServer{failures: []codes.Code{codes.Unavailable, codes.Unavailable}}
	client := serve(t, server)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	requestID := newRequestID()

	if err := deleteWithRetry(ctx, client, fastBackoff, requestID); err != nil {
		t.Fatalf("callWithRetry: %v", err)
	}

	seen := server.seen()
	if len(seen) != 3 {
		t.Fatalf("%d attempts, want 3 (two UNAVAILABLE, then success)", len(seen))
	}
	for i, id := range seen {
		if id != requestID {
			t.Errorf("attempt %d sent request_id %q, want %q", i+1, id, requestID)
		}
	}
}

func TestRetryReturnsOtherErrorsAtOnce(t *testing.T) {
	server := &flakyServer{afterwards: codes.FailedPrecondition}
	client := serve(t, server)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	err := deleteWithRetry(ctx, client, fastBackoff, newRequestID())

	if status.Code(err) != codes.FailedPrecondition || len(server.seen()) != 1 {
		t.Fatalf("got %v after %d attempts, want FAILED_PRECONDITION after 1", err, len(server.seen()))
	}
}

func TestRetryStopsWhenTheDeadlineLeavesNoTimeForAnotherAttempt(t *testing.T) {
	server := &flakyServer{afterwards: codes.Unavailable}
	client := serve(t, server)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()

	// waits of 10-20 ms: the last attempt starts with at least minAttemptTime (50 ms) left,
	// plenty for an in-memory call, so it is answered (UNAVAILABLE) rather than cut by the
	// deadline
	err := deleteWithRetry(ctx, client, backoff{20 * time.Millisecond, 20 * time.Millisecond},
		newRequestID())

	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want the last UNAVAILABLE", err)
	}
	if len(server.seen()) < 2 {
		t.Errorf("%d attempts, want several before the deadline", len(server.seen()))
	}
}

func TestRetryDelayReadsTheServersHint(t *testing.T) {
	st, err := status.New(codes.Unavailable, "rebalancing").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if got := retryDelay(st.Err()); got != 1500*time.Millisecond {
		t.Errorf("retryDelay = %v, want 1.5s", got)
	}
	if got := retryDelay(status.Error(codes.Unavailable, "no hint")); got != 0 {
		t.Errorf("retryDelay without RetryInfo = %v, want 0", got)
	}
}

func TestExplainNamesTheBadField(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "invalid config").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "config.topic", Description: "must not be empty"},
		}},
		&errdetails.ErrorInfo{Reason: "INVALID_CONFIG", Domain: "connect-grpc"},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := "rpc error: code = InvalidArgument desc = invalid config " +
		"(field config.topic: must not be empty; reason INVALID_CONFIG)"
	if got := explain(st.Err()); got.Error() != want || status.Code(got) != codes.InvalidArgument {
		t.Errorf("explain = %q (code %v), want %q", got, status.Code(got), want)
	}
}
