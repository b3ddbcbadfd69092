package main

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

// Optimistic concurrency (AIP-154): a write that carries the etag the client last read
// changes the connector only if nobody changed it since; otherwise it is answered ABORTED,
// with the connector's current etag in the ErrorInfo's metadata.

// readEtag returns the connector's current etag (GetConnector).
func (s session) readEtag(ctx context.Context) (string, error) {
	request := &connectv1.GetConnectorRequest{Name: s.opts.Name}
	response, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.GetConnectorResponse, error) {
			return s.client.GetConnector(ctx, request)
		})
	if err != nil {
		return "", err
	}
	etag := response.GetConnector().GetEtag()
	s.logf("etag of %s: %s", s.opts.Name, etag)
	return etag, nil
}

// refuseStale sends a write with an etag that is no longer current and returns the current
// etag its ABORTED answer names; a write that is not refused is an error.
func (s session) refuseStale(ctx context.Context, stale string) (string, error) {
	request := &connectv1.ResumeConnectorRequest{Name: s.opts.Name, Etag: stale, RequestId: newRequestID()}
	_, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.ResumeConnectorResponse, error) {
			return s.client.ResumeConnector(ctx, request)
		})
	if err == nil {
		return "", fmt.Errorf("a ResumeConnector with the stale etag %s was accepted", stale)
	}
	if status.Code(err) != codes.Aborted {
		return "", err
	}
	current := currentEtag(err)
	if current == "" {
		return "", errors.New("ABORTED without the current etag in its ErrorInfo")
	}
	s.logf("stale etag %s refused: ABORTED, current etag %s", stale, current)
	return current, nil
}

// currentEtag is the etag an ABORTED answer names in its ErrorInfo's metadata, or "".
func currentEtag(err error) string {
	for _, detail := range status.Convert(err).Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["etag"]
		}
	}
	return ""
}
