package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

const (
	// The built-in SequenceSource's source partition key (the task number) and source offset
	// key (the index of the last entry it emitted: a task resumes right after it).
	taskField = "task"
	seqField  = "seq"

	// InitialSeq is the offset the connector is created with.
	InitialSeq int64 = 41
	// AlteredSeq is the offset AlterOffsets sets: 2^53+1, which a double (the number type of
	// google.protobuf.Struct) cannot hold, so reading it back unchanged shows that offsets
	// travel as exact integers.
	AlteredSeq int64 = 1<<53 + 1
	// entriesAfterAltered is how many entries the sequence has after AlteredSeq, so that the
	// resumed connector emits a few records and then has nothing left to do.
	entriesAfterAltered = 10

	// PatchedKey is the key PatchConnectorConfig sets (to "all"), and RemovedKey the one it
	// removes (the connector is created with it).
	PatchedKey = "errors.tolerance"
	RemovedKey = "errors.log.enable"
)

// Options configure Run.
type Options struct {
	// Name is the connector to create (it must not exist yet) and delete.
	Name string
	// Topic is the Kafka topic the connector writes to.
	Topic string
	// CallTimeout is the deadline of each unary call attempt.
	CallTimeout time.Duration
	// WatchTimeout bounds the wait for the connector and its tasks to run.
	WatchTimeout time.Duration
	// Log receives one line per step.
	Log io.Writer
}

// Report is what Run read back from the worker.
type Report struct {
	// CreatedSeq is the offset GetOffsets returned after CreateConnector.
	CreatedSeq int64
	// AlteredSeq is the offset GetOffsets returned after AlterOffsets.
	AlteredSeq int64
	// PatchedConfig is the whole config PatchConnectorConfig answered.
	PatchedConfig map[string]string
	// Running is the status the watch ended on: the connector and its tasks RUNNING.
	Running *connectv1.ConnectorStatus
	// Topics is what GetConnectorTopics answered once the connector had written (KIP-558).
	Topics []string
	// PreviewValue is the value PreviewPipeline answered the connector would produce for the
	// sample InitialSeq with a HoistField transformation added: {"seq":41}.
	PreviewValue string
	// ReadEtag is the etag GetConnector read before the patch, PatchedEtag the one the patch
	// (conditional on ReadEtag) answered, and RefusedEtag the current etag the ABORTED
	// answer to a write with the stale ReadEtag named: PatchedEtag.
	ReadEtag, PatchedEtag, RefusedEtag string
}

// Run creates a SequenceSource connector STOPPED at offset InitialSeq (KIP-980, KIP-995),
// checks its offsets, alters them to AlteredSeq and checks them again (KIP-875), previews
// its pipeline with a transformation added, reads its etag and patches its config on that
// etag (sets PatchedKey, removes RemovedKey: KIP-477, AIP-154), sees a write with the now
// stale etag refused ABORTED, resumes it on the current etag, watches its status
// until the connector and its tasks run, waits until the topic it writes to is tracked
// (KIP-558), and deletes it. If a step after the creation fails, it still deletes the
// connector.
//
// Every call has a deadline; every mutation carries a request_id, and a call answered
// UNAVAILABLE is retried with back-off, with the same request_id.
func Run(ctx context.Context, client connectv1.ConnectServiceClient, opts Options) (Report, error) {
	if err := opts.check(); err != nil {
		return Report{}, err
	}
	s := session{client: client, opts: opts}
	if err := s.create(ctx); err != nil {
		return Report{}, fmt.Errorf("CreateConnector: %w", explain(err))
	}
	report, err := s.afterCreate(ctx)
	if err != nil {
		s.deleteAfterFailure(ctx)
		return report, err
	}
	if err := s.delete(ctx); err != nil {
		return report, fmt.Errorf("DeleteConnector: %w", explain(err))
	}
	return report, nil
}

func (o Options) check() error {
	switch {
	case o.Name == "":
		return errors.New("Options.Name: must not be empty")
	case o.Topic == "":
		return errors.New("Options.Topic: must not be empty")
	case o.CallTimeout <= 0:
		return fmt.Errorf("Options.CallTimeout: must be positive, got %v", o.CallTimeout)
	case o.WatchTimeout <= 0:
		return fmt.Errorf("Options.WatchTimeout: must be positive, got %v", o.WatchTimeout)
	case o.Log == nil:
		return errors.New("Options.Log: must not be nil (use io.Discard)")
	}
	return nil
}

type session struct {
	client connectv1.ConnectServiceClient
	opts   Options
}

func (s session) afterCreate(ctx context.Context) (Report, error) {
	var report Report
	var err error
	if report.CreatedSeq, err = s.expectSeq(ctx, InitialSeq); err != nil {
		return report, err
	}
	if err = s.alter(ctx); err != nil {
		return report, fmt.Errorf("AlterOffsets: %w", explain(err))
	}
	if report.AlteredSeq, err = s.expectSeq(ctx, AlteredSeq); err != nil {
		return report, err
	}
	if report.PreviewValue, err = s.preview(ctx, s.config()); err != nil {
		return report, fmt.Errorf("PreviewPipeline: %w", explain(err))
	}
	if report.ReadEtag, err = s.readEtag(ctx); err != nil {
		return report, fmt.Errorf("GetConnector: %w", explain(err))
	}
	if report.PatchedConfig, report.PatchedEtag, err = s.patch(ctx, report.ReadEtag); err != nil {
		return report, fmt.Errorf("PatchConnectorConfig: %w", explain(err))
	}
	if report.RefusedEtag, err = s.refuseStale(ctx, report.ReadEtag); err != nil {
		return report, fmt.Errorf("ResumeConnector with a stale etag: %w", explain(err))
	}
	if err = s.resume(ctx, report.RefusedEtag); err != nil {
		return report, fmt.Errorf("ResumeConnector: %w", explain(err))
	}
	if report.Running, err = s.watchUntilRunning(ctx); err != nil {
		return report, fmt.Errorf("WatchConnectorStatus: %w", explain(err))
	}
	if report.Topics, err = s.awaitTopics(ctx); err != nil {
		return report, fmt.Errorf("GetConnectorTopics: %w", explain(err))
	}
	return report, nil
}

// topicsPollInterval is how often awaitTopics asks again while no topic is tracked yet.
const topicsPollInterval = 200 * time.Millisecond

// awaitTopics asks for the connector's tracked topics until there is one (its task records
// a topic once a batch written to it is acknowledged), for at most WatchTimeout.
func (s session) awaitTopics(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.WatchTimeout)
	defer cancel()
	request := &connectv1.GetConnectorTopicsRequest{Name: s.opts.Name}
	for {
		response, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
			func(ctx context.Context) (*connectv1.GetConnectorTopicsResponse, error) {
				return s.client.GetConnectorTopics(ctx, request)
			})
		if err != nil {
			return nil, err
		}
		if topics := response.GetTopics(); len(topics) > 0 {
			s.logf("topics of %s: %s", s.opts.Name, strings.Join(topics, ", "))
			return topics, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no topic tracked within %v: %w", s.opts.WatchTimeout, ctx.Err())
		case <-time.After(topicsPollInterval):
		}
	}
}

func (s session) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(s.opts.Log, format+"\n", args...)
}

// config is the connector's config as created.
func (s session) config() map[string]string {
	return map[string]string{
		"connector.class": "SequenceSource",
		"topic":           s.opts.Topic,
		"tasks.max":       "1",
		"sequence.count":  strconv.FormatInt(AlteredSeq+1+entriesAfterAltered, 10),
		RemovedKey:        "true",
	}
}

func (s session) create(ctx context.Context) error {
	request := &connectv1.CreateConnectorRequest{
		Name:           s.opts.Name,
		Config:         s.config(),
		InitialState:   connectv1.InitialState_INITIAL_STATE_STOPPED,
		InitialOffsets: &connectv1.ConnectorOffsets{Offsets: []*connectv1.ConnectorOffset{seqOffset(InitialSeq)}},
		RequestId:      newRequestID(),
	}
	_, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.CreateConnectorResponse, error) {
			return s.client.CreateConnector(ctx, request)
		})
	if err == nil {
		s.logf("created %s: STOPPED, offset %s=%d (request_id %s)",
			s.opts.Name, seqField, InitialSeq, request.RequestId)
	}
	return err
}

// expectSeq reads the connector's offset and fails unless it is want.
func (s session) expectSeq(ctx context.Context, want int64) (int64, error) {
	request := &connectv1.GetOffsetsRequest{Name: s.opts.Name}
	response, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.GetOffsetsResponse, error) {
			return s.client.GetOffsets(ctx, request)
		})
	if err != nil {
		return 0, fmt.Errorf("GetOffsets: %w", explain(err))
	}
	got, err := seqOf(response.GetOffsets())
	if err != nil {
		return 0, fmt.Errorf("GetOffsets: %w", err)
	}
	s.logf("offsets of %s: %s=%d", s.opts.Name, seqField, got)
	if got != want {
		return got, fmt.Errorf("GetOffsets: %s=%d, want %d", seqField, got, want)
	}
	return got, nil
}

func (s session) alter(ctx context.Context) error {
	request := &connectv1.AlterOffsetsRequest{
		Name:      s.opts.Name,
		Offsets:   []*connectv1.ConnectorOffset{seqOffset(AlteredSeq)},
		RequestId: newRequestID(),
	}
	response, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.AlterOffsetsResponse, error) {
			return s.client.AlterOffsets(ctx, request)
		})
	if err == nil {
		s.logf("altered offsets of %s: %s", s.opts.Name, response.GetMessage())
	}
	return err
}

// patch sets PatchedKey and removes RemovedKey (a null Value), leaving the other keys,
// provided the connector's etag is still etag; it returns the merged config the worker
// answered and the connector's new etag.
func (s session) patch(ctx context.Context, etag string) (map[string]string, string, error) {
	request := &connectv1.PatchConnectorConfigRequest{
		Name: s.opts.Name,
		Config: map[string]*structpb.Value{
			PatchedKey: structpb.NewStringValue("all"),
			RemovedKey: structpb.NewNullValue(),
		},
		RequestId: newRequestID(),
		Etag:      etag,
	}
	response, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.PatchConnectorConfigResponse, error) {
			return s.client.PatchConnectorConfig(ctx, request)
		})
	if err != nil {
		return nil, "", err
	}
	config := response.GetConnector().GetConfig()
	patched := response.GetConnector().GetEtag()
	s.logf("patched %s: %s=%s, %s removed (etag %s, now %s)",
		s.opts.Name, PatchedKey, config[PatchedKey], RemovedKey, etag, patched)
	return config, patched, nil
}

// resume resumes the connector provided its etag is still etag.
func (s session) resume(ctx context.Context, etag string) error {
	request := &connectv1.ResumeConnectorRequest{Name: s.opts.Name, RequestId: newRequestID(), Etag: etag}
	_, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.ResumeConnectorResponse, error) {
			return s.client.ResumeConnector(ctx, request)
		})
	if err == nil {
		s.logf("resumed %s (etag %s)", s.opts.Name, etag)
	}
	return err
}

// watchUntilRunning follows the status stream until the connector and its tasks run. A
// stream that breaks with UNAVAILABLE is opened again: its first message is the current
// status, so no change is missed.
func (s session) watchUntilRunning(ctx context.Context) (*connectv1.ConnectorStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.WatchTimeout)
	defer cancel()
	return callWithRetry(ctx, s.opts.WatchTimeout, defaultBackoff, s.watchOnce)
}

func (s session) watchOnce(ctx context.Context) (*connectv1.ConnectorStatus, error) {
	stream, err := s.client.WatchConnectorStatus(ctx,
		&connectv1.WatchConnectorStatusRequest{Name: s.opts.Name})
	if err != nil {
		return nil, err
	}
	for {
		message, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the status stream ended before the connector ran")
		}
		if err != nil {
			return nil, err
		}
		if message.GetDeleted() {
			return nil, errors.New("the connector was deleted before it ran")
		}
		current := message.GetStatus()
		s.logf("status of %s: %s", s.opts.Name, describeStatus(current))
		if trace := failure(current); trace != "" {
			return nil, fmt.Errorf("the connector failed: %s", trace)
		}
		if running(current) {
			return current, nil
		}
	}
}

func (s session) delete(ctx context.Context) error {
	request := &connectv1.DeleteConnectorRequest{Name: s.opts.Name, RequestId: newRequestID()}
	_, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.DeleteConnectorResponse, error) {
			return s.client.DeleteConnector(ctx, request)
		})
	if err == nil {
		s.logf("deleted %s", s.opts.Name)
	}
	return err
}

// deleteAfterFailure removes the connector a failed run created, even if ctx has ended.
func (s session) deleteAfterFailure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CallTimeout)
	defer cancel()
	if err := s.delete(ctx); err != nil && status.Code(err) != codes.NotFound {
		s.logf("could not delete %s after the failure: %v", s.opts.Name, explain(err))
	}
}

// seqOffset is task 0's partition at offset seq.
func seqOffset(seq int64) *connectv1.ConnectorOffset {
	return &connectv1.ConnectorOffset{
		Partition: &connectv1.OffsetFields{Fields: map[string]*connectv1.OffsetValue{
			taskField: integer(0),
		}},
		Offset: &connectv1.OffsetFields{Fields: map[string]*connectv1.OffsetValue{
			seqField: integer(seq),
		}},
	}
}

func integer(n int64) *connectv1.OffsetValue {
	return &connectv1.OffsetValue{Kind: &connectv1.OffsetValue_IntegerValue{IntegerValue: n}}
}

// seqOf is task 0's offset among offsets.
func seqOf(offsets []*connectv1.ConnectorOffset) (int64, error) {
	for _, entry := range offsets {
		task, isInt := entry.GetPartition().GetFields()[taskField].GetKind().(*connectv1.OffsetValue_IntegerValue)
		if !isInt || task.IntegerValue != 0 {
			continue
		}
		value := entry.GetOffset().GetFields()[seqField]
		seq, isInt := value.GetKind().(*connectv1.OffsetValue_IntegerValue)
		if !isInt {
			return 0, fmt.Errorf("offset field %q of partition {%s: 0} is not an integer: %v",
				seqField, taskField, value)
		}
		return seq.IntegerValue, nil
	}
	return 0, fmt.Errorf("no offset for partition {%s: 0} among %d offsets", taskField, len(offsets))
}

func running(st *connectv1.ConnectorStatus) bool {
	if st.GetConnector().GetState() != connectv1.InstanceState_INSTANCE_STATE_RUNNING ||
		len(st.GetTasks()) == 0 {
		return false
	}
	for _, task := range st.GetTasks() {
		if task.GetState() != connectv1.InstanceState_INSTANCE_STATE_RUNNING {
			return false
		}
	}
	return true
}

// failure is the trace of the connector's or a task's failure, or "".
func failure(st *connectv1.ConnectorStatus) string {
	if st.GetConnector().GetState() == connectv1.InstanceState_INSTANCE_STATE_FAILED {
		return "connector: " + st.GetConnector().GetTrace()
	}
	for _, task := range st.GetTasks() {
		if task.GetState() == connectv1.InstanceState_INSTANCE_STATE_FAILED {
			return fmt.Sprintf("task %d: %s", task.GetId(), task.GetTrace())
		}
	}
	return ""
}

func describeStatus(st *connectv1.ConnectorStatus) string {
	text := "connector " + stateName(st.GetConnector().GetState())
	for _, task := range st.GetTasks() {
		text += fmt.Sprintf(", task %d %s", task.GetId(), stateName(task.GetState()))
	}
	return text
}

func stateName(state connectv1.InstanceState) string {
	return strings.TrimPrefix(state.String(), "INSTANCE_STATE_")
}
