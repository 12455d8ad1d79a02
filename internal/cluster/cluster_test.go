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
// returns the servers (in order) and a URL naming all of them. The cluster
// ports are picked free and then bound by the servers, so another listener
// (a server's own client port, another package's tests) can take one in
// between: a cluster that does not come up is tried again on other ports.
func runCluster(t testing.TB) ([]*server.Server, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		servers, urls, err := startCluster(t)
		if err == nil {
			t.Cleanup(func() {
				for _, s := range servers {
					s.Shutdown()
					s.WaitForShutdown()
				}
			})
			return servers, urls
		}
		if attempt == 3 {
			t.Fatalf("%v (3 attempts)", err)
		}
		t.Logf("%v; trying again on other ports", err)
	}
}

// startCluster is one attempt of runCluster; on failure it shuts down the
// servers it started.
func startCluster(t testing.TB) (servers []*server.Server, urls string, err error) {
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
	defer func() {
		if err != nil {
			for _, s := range servers {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	}()
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("s%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "wasmgate-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		s, err := server.NewServer(o)
		if err != nil {
			return servers, "", err
		}
		go s.Start()
		servers = append(servers, s)
	}
	for i, s := range servers {
		if !s.ReadyForConnections(60 * time.Second) {
			return servers, "", fmt.Errorf("server %d not ready within 60s", i+1)
		}
		if urls != "" {
			urls += ","
		}
		urls += s.ClientURL()
	}
	// JetStream needs a meta leader before streams can be made.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			// A leader that sees every server: streams of 3 replicas can
			// be placed.
			if s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == n {
				return servers, urls, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return servers, "", fmt.Errorf("no JetStream meta leader within 30s")
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
