package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/wasmgate/wasmgate/audit"
)

func ExampleCanonicalize() {
	c, err := audit.Canonicalize([]byte(`{ "b": [1.0, 2e-7, -0], "a": "\u00e9" }`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(c.Bytes), c.Depth, c.LongestList)

	_, err = audit.Canonicalize([]byte(`{"id": 9007199254740993}`))
	fmt.Println(errors.Is(err, audit.ErrNotJSON), err)
	// Output:
	// {"a":"é","b":[1,2e-7,0]} 2 3
	// true audit: integer beyond ±2^53 at offset 7
}

func ExampleVerify() {
	sink := audit.NewMemorySink()
	for _, input := range []string{`{"text":"a"}`, `{"text":"b"}`} {
		c, err := audit.Canonicalize([]byte(input))
		if err != nil {
			panic(err)
		}
		_, err = sink.Append(context.Background(), audit.Record{
			Action:      "text_upper@1.2.0",
			ExecutorID:  "text_upper",
			Status:      "BLOCKED",
			ReasonCodes: []string{"EXECUTOR_NOT_FOUND"},
			TraceID:     "5f0c6c4e-9a51-4bde-8f5e-8f4b8b1d2a10",
			TsUTC:       "2025-01-01T00:00:00Z",
			InputDigest: audit.Digest(c.Bytes),
		})
		if err != nil {
			panic(err)
		}
	}
	var log bytes.Buffer
	if _, err := sink.WriteTo(&log); err != nil {
		panic(err)
	}

	report, err := audit.Verify(bytes.NewReader(log.Bytes()))
	fmt.Println(report.Records, err)

	// Drop the first line: the second no longer follows anything.
	_, rest, _ := bytes.Cut(log.Bytes(), []byte("\n"))
	_, err = audit.Verify(bytes.NewReader(rest))
	fmt.Println(err)
	// Output:
	// 2 <nil>
	// audit: log line 1: seq gap: expected 1, found 2 (a record was removed)
}
