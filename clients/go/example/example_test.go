package main

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

// targetEnv names the live worker these tests talk to (tests/integration/test_go_client.py
// starts one and sets it).
const targetEnv = "CONNECT_GRPC_TARGET"

// liveSecurity is how to reach that worker when it serves TLS: these variables play the part
// of the example's flags (and CONNECT_GRPC_TOKEN its own); none set: plaintext.
func liveSecurity() Security {
	return Security{
		CAFile:     os.Getenv("CONNECT_GRPC_CACERT"),
		CertFile:   os.Getenv("CONNECT_GRPC_CERT"),
		KeyFile:    os.Getenv("CONNECT_GRPC_KEY"),
		ServerName: os.Getenv("CONNECT_GRPC_SERVER_NAME"),
		TokenFile:  os.Getenv("CONNECT_GRPC_TOKEN_FILE"),
		Token:      os.Getenv(tokenEnv),
	}
}

func liveClient(t *testing.T) connectv1.ConnectServiceClient {
	t.Helper()
	address := getenv(t, targetEnv)
	dialOptions, err := liveSecurity().DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dial(address, dialOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return connectv1.NewConnectServiceClient(conn)
}

func getenv(t *testing.T, key string) string {
	t.Helper()
	value := strings.TrimSpace(os.Getenv(key))
	if value == "" {
		t.Fatalf("%s is not set: these tests need a live worker, e.g. `make demo`, then "+
			"`%s=localhost:8083 go test ./...` (tests/integration/test_go_client.py starts one "+
			"and sets it)", key, key)
	}
	return value
}

func uniqueName(prefix string) string {
	return prefix + "-" + strings.ToLower(crand.Text()[:10])
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestExample(t *testing.T) {
	client := liveClient(t)
	name := uniqueName("go-example-test")
	opts := Options{
		Name: name, Topic: name, CallTimeout: 30 * time.Second, WatchTimeout: 3 * time.Minute,
		Log: testLog{t},
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	report, err := Run(ctx, client, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	if report.CreatedSeq != InitialSeq || report.AlteredSeq != AlteredSeq {
		t.Errorf("offsets read back: created %d, altered %d; want %d, %d",
			report.CreatedSeq, report.AlteredSeq, InitialSeq, AlteredSeq)
	}
	if _, kept := report.PatchedConfig[RemovedKey]; kept || report.PatchedConfig[PatchedKey] != "all" ||
		report.PatchedConfig["sequence.count"] == "" {
		t.Errorf("config after the patch: %v, want %s=all, no %s, the other keys kept",
			report.PatchedConfig, PatchedKey, RemovedKey)
	}
	if !running(report.Running) || report.Running.GetName() != name {
		t.Errorf("the watch ended on %v, want %s and its tasks RUNNING", report.Running, name)
	}
	if len(report.Topics) != 1 || report.Topics[0] != name {
		t.Errorf("tracked topics %v, want [%s]", report.Topics, name)
	}
	if want := fmt.Sprintf(`{"%s":%d}`, PreviewField, InitialSeq); report.PreviewValue != want {
		t.Errorf("previewed value %q, want %q", report.PreviewValue, want)
	}
	if report.ReadEtag == "" || report.PatchedEtag == "" || report.PatchedEtag == report.ReadEtag {
		t.Errorf("etags read %q, after the patch %q: want two different, non-empty etags",
			report.ReadEtag, report.PatchedEtag)
	}
	if report.RefusedEtag != report.PatchedEtag {
		t.Errorf("the stale write's ABORTED answer named etag %q, want the current %q",
			report.RefusedEtag, report.PatchedEtag)
	}
	_, err = client.GetConnector(ctx, &connectv1.GetConnectorRequest{Name: name})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetConnector after Run: %v, want NOT_FOUND (deleted)", err)
	}
}

// The reason retries keep their request_id: a create sent again with the same id is
// answered like the first one, while a new id meets the connector the first one made.
func TestCreateRepeatedWithItsRequestIDIsAnsweredOnce(t *testing.T) {
	client := liveClient(t)
	name := uniqueName("go-request-id-test")
	request := &connectv1.CreateConnectorRequest{
		Name: name,
		Config: map[string]string{
			"connector.class": "SequenceSource", "topic": name, "tasks.max": "1",
		},
		InitialState: connectv1.InitialState_INITIAL_STATE_STOPPED,
		RequestId:    newRequestID(),
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	first, err := client.CreateConnector(ctx, request)
	if err != nil {
		t.Fatalf("CreateConnector: %v", explain(err))
	}
	t.Cleanup(func() { // t.Context() has ended by now
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = client.DeleteConnector(ctx, &connectv1.DeleteConnectorRequest{Name: name})
	})

	again, err := client.CreateConnector(ctx, request)
	if err != nil {
		t.Fatalf("CreateConnector again with the same request_id: %v", explain(err))
	}
	if !proto.Equal(first, again) {
		t.Errorf("the repeated create was answered %v, want the first answer %v", again, first)
	}

	fresh := proto.Clone(request).(*connectv1.CreateConnectorRequest)
	fresh.RequestId = newRequestID()
	_, err = client.CreateConnector(ctx, fresh)
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("CreateConnector with a new request_id: %v, want ALREADY_EXISTS", err)
	}
}
