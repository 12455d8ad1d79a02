package cluster

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// runServer starts an embedded NATS server with JetStream, storing in a
// directory of t's, shut down when t ends, and returns its client URL.
func runServer(t testing.TB) (url string) {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(60 * time.Second) {
		s.Shutdown()
		t.Fatal("nats server: not ready for connections within 60s")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}
