package main

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// backoff is how long to wait between attempts: initial, doubling after each attempt, at
// most maximum.
type backoff struct {
	initial time.Duration
	maximum time.Duration
}

var defaultBackoff = backoff{initial: 100 * time.Millisecond, maximum: 5 * time.Second}

// callWithRetry runs call, each attempt under a deadline of callTimeout (never later than
// ctx's), and runs it again while it fails with UNAVAILABLE (no leader yet, a rebalance,
// Kafka briefly unreachable) and ctx leaves time for another attempt. Between attempts it
// waits the back-off, or the server's RetryInfo delay if that is longer.
//
// call must send the same request every time: a mutation keeps its request_id, so that if
// an attempt did take effect but its answer was lost, the server replays that answer
// instead of applying the change twice (or answering ALREADY_EXISTS to a retried create).
func callWithRetry[T any](
	ctx context.Context, callTimeout time.Duration, b backoff, call func(context.Context) (T, error),
) (T, error) {
	wait := b.initial
	for attempt := 1; ; attempt++ {
		result, err := attemptCall(ctx, callTimeout, call)
		if status.Code(err) != codes.Unavailable {
			return result, err
		}
		if !sleep(ctx, max(jittered(wait), retryDelay(err))) {
			return result, fmt.Errorf("still unavailable after %d attempts: %w", attempt, err)
		}
		wait = min(wait*2, b.maximum)
	}
}

func attemptCall[T any](
	ctx context.Context, callTimeout time.Duration, call func(context.Context) (T, error),
) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return call(ctx)
}

// jittered spreads retries of many clients: a random duration in [d/2, d].
func jittered(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryDelay is the server's RetryInfo hint in err's status details, or 0.
func retryDelay(err error) time.Duration {
	for _, detail := range status.Convert(err).Details() {
		if info, ok := detail.(*errdetails.RetryInfo); ok {
			return info.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// minAttemptTime is the least time ctx must leave after a wait for another attempt to be
// worth making: an attempt started just before the deadline would only end in
// DEADLINE_EXCEEDED, hiding the UNAVAILABLE (and its hint) that the caller should see.
const minAttemptTime = 50 * time.Millisecond

// sleep waits d and reports true, or reports false at once if ctx would end before d and
// one more attempt (minAttemptTime) have passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d+minAttemptTime {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newRequestID is a fresh idempotency key for one mutation (all its attempts).
func newRequestID() string {
	return "go-example-" + strings.ToLower(crand.Text())
}

// explain adds a gRPC error's details to its message: which fields were wrong
// (BadRequest), which conditions failed (PreconditionFailure) and the ErrorInfo reason.
func explain(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.OK {
		return err
	}
	var notes []string
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				notes = append(notes, fmt.Sprintf("field %s: %s", v.GetField(), v.GetDescription()))
			}
		case *errdetails.PreconditionFailure:
			for _, v := range d.GetViolations() {
				notes = append(notes, fmt.Sprintf("precondition %s %s: %s",
					v.GetType(), v.GetSubject(), v.GetDescription()))
			}
		case *errdetails.ErrorInfo:
			notes = append(notes, "reason "+d.GetReason())
		}
	}
	if len(notes) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(notes, "; "))
}
