package main

import (
	"context"
	"fmt"
	"strconv"

	connectv1 "github.com/connect-grpc/connect-grpc/clients/go/connectv1"
)

// PreviewField is the field the previewed HoistField transformation wraps a value in.
const PreviewField = "seq"

// preview runs one sample value, InitialSeq, through the connector's config with a
// HoistField transformation and JsonConverter added (PreviewPipeline writes nothing and runs
// no task), and returns the bytes the connector would produce: {"seq":41}.
func (s session) preview(ctx context.Context, config map[string]string) (string, error) {
	previewed := map[string]string{
		"transforms":                     "wrap",
		"transforms.wrap.type":           "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.wrap.field":          PreviewField,
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	}
	for key, value := range config {
		previewed[key] = value
	}
	sample := &connectv1.PreviewSampleRecord{Value: &connectv1.PreviewSampleData{
		Data: &connectv1.PreviewSampleData_Json{Json: strconv.FormatInt(InitialSeq, 10)},
	}}
	request := &connectv1.PreviewPipelineRequest{
		Config: previewed,
		Input: &connectv1.PreviewPipelineRequest_Samples{
			Samples: &connectv1.PreviewSamples{Records: []*connectv1.PreviewSampleRecord{sample}},
		},
	}
	response, err := callWithRetry(ctx, s.opts.CallTimeout, defaultBackoff,
		func(ctx context.Context) (*connectv1.PreviewPipelineResponse, error) {
			return s.client.PreviewPipeline(ctx, request)
		})
	if err != nil {
		return "", err
	}
	records := response.GetRecords()
	if len(records) != 1 || records[0].GetOutcome() != connectv1.PreviewOutcome_PREVIEW_OUTCOME_DELIVERED {
		return "", fmt.Errorf("want one DELIVERED record, got %v", records)
	}
	value := string(records[0].GetOutput().GetValue().GetRaw())
	s.logf("previewed %s's pipeline: %d through %d stages -> %s",
		s.opts.Name, InitialSeq, len(records[0].GetStages()), value)
	return value, nil
}
