package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
)

// TestNamesInjective: no two prefixes share a stream, bucket or consumer
// name, nor two roles of one prefix, over every prefix of up to five
// characters drawn from {a, b, -, _}; the streams JetStream makes for the
// buckets (KV_…, OBJ_…) count too, and names are compared ignoring case,
// as a file store on a case-insensitive file system would. Each name is one
// NATS takes, and the default prefix keeps the names it always had.
func TestNamesInjective(t *testing.T) {
	prefixes := []string{}
	var grow func(p string)
	grow = func(p string) {
		prefixes = append(prefixes, p)
		if len(p) == 5 {
			return
		}
		for _, c := range []string{"a", "b", "-", "_"} {
			grow(p + c)
		}
	}
	grow("a")
	grow("b")
	prefixes = append(prefixes, strings.Repeat("z", 32), strings.Repeat("z-", 16), strings.Repeat("z_", 16))

	streamName := regexp.MustCompile(`^[^\s.*>/\\]{1,255}$`) // what nats-server takes
	bucketName := regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)     // what nats.go takes
	owner := map[string]string{}
	for _, p := range prefixes {
		n, err := NewNames(p)
		require.NoError(t, err, p)
		streams := map[string]string{
			"actions stream": n.ActionsStream(), "audit stream": n.AuditStream(),
			"modules stream": "OBJ_" + n.ModulesBucket(), "registry stream": "KV_" + n.RegistryBucket(),
			"requests stream": "KV_" + n.RequestsBucket(),
		}
		for role, name := range streams {
			require.Regexp(t, streamName, name, "%s of %q", role, p)
			key := strings.ToLower(name)
			if other, ok := owner[key]; ok {
				t.Fatalf("the %s of %q is %s, which is also %s", role, p, name, other)
			}
			owner[key] = fmt.Sprintf("the %s of %q", role, p)
		}
		for _, b := range []string{n.ModulesBucket(), n.RegistryBucket(), n.RequestsBucket(), n.Workers()} {
			require.Regexp(t, bucketName, b, p)
		}
	}

	d, err := NewNames("")
	require.NoError(t, err)
	assert.Equal(t, []string{"WASMGATE_ACTIONS", "WASMGATE_AUDIT", "wasmgate_workers", "wasmgate_modules", "wasmgate_registry", "wasmgate.actions.>", "wasmgate.audit"},
		[]string{d.ActionsStream(), d.AuditStream(), d.Workers(), d.ModulesBucket(), d.RegistryBucket(), d.ActionsSubjects(), d.AuditSubject()})
	assert.Equal(t, "wasmgate_requests", d.RequestsBucket())
	ta, err := NewNames("t-a")
	require.NoError(t, err)
	assert.Equal(t, []string{"T-A_ACTIONS", "T-A_AUDIT"}, []string{ta.ActionsStream(), ta.AuditStream()})
}

// TestTenantsApart: two prefixes that differ only in '-' and '_' run side
// by side on one server, each with its worker: both workers start, each
// tenant's requests are executed by its own worker (and audited to its own
// chain), and each chain holds only its own tenant's records. The workers'
// consumer takes only its tenant's actions subjects.
func TestTenantsApart(t *testing.T) {
	url := runServer(t)
	tenants := []deployment{newTenant(t, url, "t-a", Layout{Memory: true}), newTenant(t, url, "t_a", Layout{Memory: true})}
	for _, d := range tenants {
		d.startWorker(t, WorkerOptions{})
	}

	traces := map[string][]string{}
	for i, d := range tenants {
		cl := d.client(t, ClientOptions{})
		for k := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := cl.Execute(ctx, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(fmt.Sprintf(`{"numbers":[%d,%d]}`, 10*i, k))})
			cancel()
			require.NoError(t, err, "%s request %d", d.prefix, k)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.Equal(t, fmt.Sprintf(`{"sum":%d}`, 10*i+k), string(res.Output))
			traces[d.prefix] = append(traces[d.prefix], res.TraceID)
		}
	}

	for _, d := range tenants {
		recs, rep := d.exportAudit(t)
		assert.Empty(t, rep.Unanswered, d.prefix)
		var verdicts []string
		for _, r := range recs {
			require.Contains(t, traces[d.prefix], r.TraceID, "record %d of %s's chain is another tenant's", r.Seq, d.prefix)
			if r.EventType == audit.EventActionAudit {
				verdicts = append(verdicts, r.TraceID)
			}
		}
		assert.ElementsMatch(t, traces[d.prefix], verdicts, "%s's chain: a verdict for each of its requests", d.prefix)

		c := d.conn(t, Layout{})
		cons, err := c.JS.Consumer(context.Background(), c.Names.ActionsStream(), c.Names.Workers())
		require.NoError(t, err)
		assert.Equal(t, d.prefix+".actions.>", cons.CachedInfo().Config.FilterSubject)
	}
}

// TestWorkersConsumerGetsItsFilter: a workers' consumer made before
// consumers filtered (it takes whatever the stream holds) is given the
// deployment's subjects when a worker joins it.
func TestWorkersConsumerGetsItsFilter(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	c := d.conn(t, Layout{})
	ctx := context.Background()
	_, err := c.JS.CreateConsumer(ctx, c.Names.ActionsStream(), jetstream.ConsumerConfig{Durable: c.Names.Workers(), AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	d.startWorker(t, WorkerOptions{})
	cons, err := c.JS.Consumer(ctx, c.Names.ActionsStream(), c.Names.Workers())
	require.NoError(t, err)
	assert.Equal(t, "wasmgate.actions.>", cons.CachedInfo().Config.FilterSubject)
}

// TestSetupRefusesAnotherDeploymentsStream: a stream of this deployment's
// name that holds other subjects, or another stream holding this
// deployment's subjects (such as the one a wasmgate that made '-' '_'
// named for the prefix), is refused with an error naming both and what to
// do, rather than shared.
func TestSetupRefusesAnotherDeploymentsStream(t *testing.T) {
	for _, tt := range []struct {
		name   string
		prefix string
		stream jetstream.StreamConfig
		want   string
	}{{
		name:   "our name, other subjects",
		prefix: "ta",
		stream: jetstream.StreamConfig{Name: "TA_ACTIONS", Subjects: []string{"other.actions.>"}},
		want: `nats: stream TA_ACTIONS holds subjects other.actions.> where prefix "ta" wants ta.actions.>: it is another deployment's; ` +
			`choose another --nats-prefix, or remove that stream if nothing needs it`,
	}, {
		name:   "our subjects, the old name",
		prefix: "t-a",
		stream: jetstream.StreamConfig{Name: "T_A_ACTIONS", Subjects: []string{"t-a.actions.>"}},
		want: `nats: stream T-A_ACTIONS: its subjects t-a.actions.> are held by stream T_A_ACTIONS, the name wasmgate gave it before stream names kept '-' ` +
			`(prefixes differing only in '-' and '_' shared their streams then): let this deployment's workers empty the queue, ` +
			`export its chain, and remove its streams to lay it out again (see docs/CLUSTER.md, "Tenants"): `,
	}, {
		name:   "our subjects, another stream",
		prefix: "ta",
		stream: jetstream.StreamConfig{Name: "EVERYTHING", Subjects: []string{"ta.>"}},
		want:   `nats: stream TA_ACTIONS: its subjects ta.actions.> are held by stream EVERYTHING, another deployment's: choose another --nats-prefix: `,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Connect(Options{URL: runServer(t), Prefix: tt.prefix, Name: t.Name()})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			tt.stream.Storage = jetstream.MemoryStorage
			_, err = c.JS.CreateStream(ctx, tt.stream)
			require.NoError(t, err)
			err = c.Setup(ctx, Layout{Memory: true})
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got %q\nwant it to start %q", err, tt.want)
		})
	}
}
