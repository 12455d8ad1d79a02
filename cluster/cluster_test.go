package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// runCluster starts a 3-server JetStream cluster in the test process and
// returns the servers (in order) and a URL naming all of them.
func runCluster(t testing.TB) ([]*server.Server, string) {
	t.Helper()
	const n = 3
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	servers := make([]*server.Server, n)
	urls := ""
	for i := range servers {
		o := &server.Options{
			ServerName: fmt.Sprintf("s%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "wasmgate-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		s, err := server.NewServer(o)
		require.NoError(t, err)
		go s.Start()
		servers[i] = s
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	for i, s := range servers {
		require.True(t, s.ReadyForConnections(60*time.Second), "server %d not ready", i+1)
		if urls != "" {
			urls += ","
		}
		urls += s.ClientURL()
	}
	// JetStream needs a meta leader before streams can be made.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			// A leader that sees every server: streams of 3 replicas can
			// be placed.
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == n {
				return servers, urls
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no JetStream meta leader within 20s")
	return nil, ""
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
