package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/pipeline"
)

// A Go service sends its actions to the workers of a deployment: the
// Client is a pipeline.Runner, as a *pipeline.Pipeline is, and its results
// are the ones a pipeline of this process would give.
func ExampleClient() {
	conn, err := cluster.Connect(cluster.Options{URL: "nats://127.0.0.1:4222"})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Setup(ctx, cluster.Layout{}); err != nil {
		log.Fatal(err)
	}
	var runner pipeline.Runner
	client, err := cluster.NewClient(ctx, conn, cluster.ClientOptions{})
	if err != nil {
		log.Fatal(err) // cluster.ErrNoRegistry: run `wasmgate publish` first
	}
	defer client.Close()
	runner = client
	// The deadline travels with the request: a worker that takes it later
	// refuses it unrun, BLOCKED EXECUTOR_TIMEOUT.
	res, err := runner.Execute(ctx, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1,2]}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, string(res.Output))
}
