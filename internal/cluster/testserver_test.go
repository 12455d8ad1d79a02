package cluster

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// runServer starts an embedded NATS server with JetStream, storing in a
// directory of t's, shut down when t ends, and returns its client URL.
func runServer(t *testing.T) (url string) { return startSecuredServer(t, server.Options{}) }
