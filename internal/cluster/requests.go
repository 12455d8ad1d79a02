package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
)

// headerIndexed marks an audit message whose request is claimed in the
// request index; a verdict without it (stored by a wasmgate before the index,
// or beside it) is indexed when a worker starts (see Worker.indexChain).
const headerIndexed = "Wasmgate-Indexed"

// Entry states.
const (
	stateClaimed = "claimed"
	stateJudged  = "judged"
)

// indexEntry is the value of a request id's key in RequestsBucket.
type indexEntry struct {
	// State is stateClaimed while the request is being executed (or its
	// worker stopped), stateJudged once its verdict is stored.
	State string `json:"state"`
	// After is the chain's last seq when the id was first claimed: every
	// record of the request is after it.
	After uint64 `json:"after"`
	// Message is the stream sequence of the request message that holds the
	// claim, 0 when none does.
	Message uint64 `json:"message,omitempty"`
	// Verdict is the seq of the request's verdict record.
	Verdict uint64 `json:"verdict,omitempty"`
	// Reply is the answer given, a result message's body.
	Reply json.RawMessage `json:"reply,omitempty"`
}

// indexMarkKey is the key of the seq through which every verdict of the
// chain is in the index.
const indexMarkKey = "chain.indexed"

var plainRequestID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// requestKey is request id's key in RequestsBucket: the id itself when it
// is letters, digits, '_' and '-' (a UUID, as a Client makes), else '=' and
// its digest. Neither form can be the other's, nor indexMarkKey.
func requestKey(id string) string {
	if plainRequestID.MatchString(id) {
		return id
	}
	return "=" + audit.Digest([]byte(id))
}

// requestIndex is a deployment's request index (RequestsBucket), which
// makes a request id name one request for ever, whatever the stream's
// deduplication window and the workers' memory: a request id that has a
// verdict is never executed again, it is answered with that verdict.
//
// A worker claims an id before executing its request: an entry naming the
// request message (its stream sequence) and the chain's last seq then, after
// which every record of the request lies. Once the verdict is stored it
// replaces the claim with the verdict's seq and the answer it gives. Then:
//
//   - a message whose id is judged is answered with the answer stored,
//     marked as reused;
//   - a message whose id another message claims, and that message is still
//     queued, waits for it (it is delivered again a second later);
//   - a message whose claim is its own (it is delivered again: its worker
//     stopped), or whose claim's message is gone, looks on the chain for
//     what was stored of the id after the claim's seq. A verdict there is
//     the answer: a message of its own runs again only to recover the
//     output (its records resolve to the stored ones; see claim), another
//     message is answered from the record.
//
// The chain is the truth, the index its durable lookup: the one window in
// which they differ (a worker stopped between storing a verdict and
// indexing it) is closed by the claim's seq, which bounds where the chain
// is searched.
type requestIndex struct {
	kv     jetstream.KeyValue
	bucket string
}

func openRequestIndex(ctx context.Context, c *Conn) (*requestIndex, error) {
	var kv jetstream.KeyValue
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		kv, err = c.JS.KeyValue(ctx, c.Names.RequestsBucket())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("request index %s: %w", c.Names.RequestsBucket(), err)
	}
	return &requestIndex{kv: kv, bucket: c.Names.RequestsBucket()}, nil
}

// get returns the entry of key and its revision; revision 0 when there is
// none.
func (x *requestIndex) get(ctx context.Context, key string) (indexEntry, uint64, error) {
	var kve jetstream.KeyValueEntry
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		kve, err = x.kv.Get(ctx, key)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return indexEntry{}, 0, nil
	}
	if err != nil {
		return indexEntry{}, 0, fmt.Errorf("request index %s, key %s: %w", x.bucket, key, err)
	}
	var e indexEntry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return indexEntry{}, 0, fmt.Errorf("request index %s, key %s: %w", x.bucket, key, err)
	}
	return e, kve.Revision(), nil
}

// put stores e under key: created when rev is 0 (jetstream.ErrKeyExists if
// it exists), else only over revision rev (jetstream.ErrKeyRevisionMismatch
// if it moved on).
func (x *requestIndex) put(ctx context.Context, key string, e indexEntry, rev uint64) (uint64, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	var got uint64
	err = retryCall(ctx, func(ctx context.Context) (err error) {
		if rev == 0 {
			got, err = x.kv.Create(ctx, key, b)
		} else {
			got, err = x.kv.Update(ctx, key, b, rev)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("request index %s, key %s: %w", x.bucket, key, err)
	}
	return got, nil
}

// remove deletes key if it is still at revision rev.
func (x *requestIndex) remove(ctx context.Context, key string, rev uint64) error {
	err := retryCall(ctx, func(ctx context.Context) error {
		return x.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	})
	if err != nil {
		return fmt.Errorf("request index %s, key %s: %w", x.bucket, key, err)
	}
	return nil
}

// mark returns the seq through which the chain's verdicts are indexed, and
// its revision (0: none yet).
func (x *requestIndex) mark(ctx context.Context) (uint64, uint64, error) {
	var kve jetstream.KeyValueEntry
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		kve, err = x.kv.Get(ctx, indexMarkKey)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("request index %s, key %s: %w", x.bucket, indexMarkKey, err)
	}
	seq, err := strconv.ParseUint(string(kve.Value()), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("request index %s, key %s: %w", x.bucket, indexMarkKey, err)
	}
	return seq, kve.Revision(), nil
}

// raiseMark sets the mark to seq unless it is there or beyond already.
func (x *requestIndex) raiseMark(ctx context.Context, seq uint64) error {
	for {
		cur, rev, err := x.mark(ctx)
		if err != nil || cur >= seq {
			return err
		}
		value := []byte(strconv.FormatUint(seq, 10))
		err = retryCall(ctx, func(ctx context.Context) (err error) {
			if rev == 0 {
				_, err = x.kv.Create(ctx, indexMarkKey, value)
			} else {
				_, err = x.kv.Update(ctx, indexMarkKey, value, rev)
			}
			return err
		})
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("request index %s, key %s: %w", x.bucket, indexMarkKey, err)
		}
		// Another worker raised it meanwhile: look again.
	}
}

type claimKey struct{}

// withClaim returns ctx carrying the claim of the request being executed:
// the AuditSink appending its records reads it (see claim).
func withClaim(ctx context.Context, c *claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

func claimOf(ctx context.Context) *claim {
	c, _ := ctx.Value(claimKey{}).(*claim)
	return c
}

// claim is what a worker's execution of a claimed request and its audit
// sink tell each other.
type claim struct {
	// attemptSeq and verdictSeq are the request's records found on the
	// chain before it ran (0: none). A record of a kind found is not
	// appended again: Append returns the stored one; and a request judged
	// without running (a verdict and no attempt) does not run now.
	attemptSeq, verdictSeq uint64

	mu      sync.Mutex
	verdict *audit.Record // as stored
	existed bool          // stored by an earlier run
}

// resolve answers an Append of r that the claim decides: the stored record
// of its kind, or a refusal. ok is false for an Append to go on.
func (c *claim) resolve(ctx context.Context, s *AuditSink, id string, r *audit.Record) (rec audit.Record, ok bool, err error) {
	isVerdict := r.EventType != audit.EventActionAttempt
	seq := c.attemptSeq
	if isVerdict {
		seq = c.verdictSeq
	}
	switch {
	case seq != 0:
		rec, err := s.load(ctx, seq)
		if err == nil && isVerdict {
			c.stored(rec, true)
		}
		return rec, true, err
	case !isVerdict && c.verdictSeq != 0:
		return audit.Record{}, true, fmt.Errorf("request %s was judged without running (audit record %d): it does not run now", id, c.verdictSeq)
	}
	return audit.Record{}, false, nil
}

func (c *claim) stored(rec audit.Record, existed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.verdict, c.existed = &rec, existed
}

// stored returns the request's verdict as stored, if one is, and whether
// an earlier run stored it.
func (c *claim) result() (*audit.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verdict, c.existed
}

// resultOf is the ActionResult a verdict record says: everything but what
// is never audited (output, message, log), classified by its reason codes
// (the executor ran when it used fuel).
func resultOf(rec audit.Record) pipeline.ActionResult {
	res := pipeline.ActionResult{
		Action: rec.Action, ExecutorID: rec.ExecutorID, ExecutorVersion: rec.ExecutorVersion,
		Status: pipeline.Status(rec.Status), ReasonCodes: make([]pipeline.ReasonCode, len(rec.ReasonCodes)),
		InputDigest: rec.InputDigest, OutputDigest: rec.OutputDigest, TraceID: rec.TraceID, TsUTC: rec.TsUTC,
		DurationMs: rec.DurationMs, FuelUsed: rec.FuelUsed, ExitCode: rec.ExitCode,
	}
	if rec.Seq > 0 {
		index := rec.Seq - 1
		res.AuditIndex = &index
	}
	for i, c := range rec.ReasonCodes {
		res.ReasonCodes[i] = pipeline.ReasonCode(c)
	}
	if rec.EnvDigest != nil {
		res.EnvDigest = *rec.EnvDigest
	}
	res.Stage, res.Failure = pipeline.Classify(res.ReasonCodes, rec.FuelUsed > 0)
	return res
}

// answerOf is the answer to a request whose verdict rec was stored by an
// earlier run: rec's result, with what fresh (this run's result, nil if it
// did not run) adds when it reached the same verdict: its message and log,
// and its output when that has the stored output digest. err is fresh's
// error then.
func answerOf(rec audit.Record, fresh *pipeline.ActionResult, freshErr error) (pipeline.ActionResult, error) {
	res := resultOf(rec)
	if fresh != nil && fresh.Status == res.Status && slices.Equal(fresh.ReasonCodes, res.ReasonCodes) {
		res.Message, res.Log = fresh.Message, fresh.Log
		res.QuotesExecutor, res.Stage, res.Failure = fresh.QuotesExecutor, fresh.Stage, fresh.Failure
		if fresh.OutputDigest != nil && res.OutputDigest != nil && *fresh.OutputDigest == *res.OutputDigest {
			res.Output = fresh.Output
		}
		if res.Output != nil || res.OutputDigest == nil {
			return res, freshErr
		}
	}
	res.Message = fmt.Sprintf("the verdict of audit record %d, given before to this request id; its output and message are not kept "+
		"(it was judged by a worker that stopped before storing its answer, or before the request index existed): the digests name them", rec.Seq)
	res.QuotesExecutor = false
	return res, nil
}

// reusedReply is the result message answering req, whose id was judged
// (entry), with what of req differs from the request judged.
func reusedReply(entry indexEntry, req pipeline.ActionRequest) ([]byte, error) {
	var w wireReply
	if err := json.Unmarshal(entry.Reply, &w); err != nil {
		return nil, fmt.Errorf("the answer stored for verdict %d: %w", entry.Verdict, err)
	}
	w.Reused = &wireReused{VerdictSeq: entry.Verdict}
	if w.Result != nil {
		w.Reused.Differs = differences(req, *w.Result)
	}
	return json.Marshal(w)
}

// differences names what of req is not what the request res judged was:
// "action", "payload", "env", "trace_id", "ts_utc" (the last two only when
// req has them: a request without gets them when it runs).
func differences(req pipeline.ActionRequest, res pipeline.ActionResult) []string {
	var d []string
	if req.Action != res.Action {
		d = append(d, "action")
	}
	if canonicalDigest(req.Payload) != res.InputDigest {
		d = append(d, "payload")
	}
	if envDigest(req.Env) != res.EnvDigest {
		d = append(d, "env")
	}
	if req.TraceID != "" && req.TraceID != res.TraceID {
		d = append(d, "trace_id")
	}
	if req.TsUTC != "" && req.TsUTC != res.TsUTC {
		d = append(d, "ts_utc")
	}
	return d
}

// canonicalDigest is the digest of b's canonical JSON, as the pipeline
// computes input_digest; "" when b has none.
func canonicalDigest(b []byte) string {
	c, err := audit.Canonicalize(b)
	if err != nil {
		return ""
	}
	return audit.Digest(c.Bytes)
}

// envDigest is env_digest as the pipeline computes it: "" for no env (or
// null).
func envDigest(env []byte) string {
	if strings.TrimSpace(string(env)) == "" {
		return ""
	}
	c, err := audit.Canonicalize(env)
	if err != nil || string(c.Bytes) == "null" {
		return ""
	}
	return audit.Digest(c.Bytes)
}

// errStopRead ends a readRecords whose caller found what it looked for.
var errStopRead = errors.New("found")

// storedRecords finds request id's attempt and verdict records stored after
// seq after (0 for one that is not): in the sink's memory, else on the
// chain.
func (w *Worker) storedRecords(ctx context.Context, id string, after uint64) (attempt, verdict uint64, err error) {
	attempt, verdict = w.sink.storedSeqs(id, after)
	if attempt != 0 && verdict != 0 {
		return attempt, verdict, nil
	}
	var info *jetstream.StreamInfo
	err = retryCall(ctx, func(ctx context.Context) (err error) {
		info, err = w.sink.stream.Info(ctx)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("audit stream %s: %w", w.conn.Names.AuditStream(), err)
	}
	if info.State.LastSeq <= after {
		return attempt, verdict, nil
	}
	err = readRecords(ctx, w.conn, after+1, info.State.LastSeq, func(seq uint64, _ []byte, h nats.Header) error {
		switch h.Get(jetstream.MsgIDHeader) {
		case id + ":attempt":
			if attempt == 0 {
				attempt = seq
			}
		case id + ":verdict":
			if verdict == 0 {
				verdict = seq
			}
		}
		if attempt != 0 && verdict != 0 {
			return errStopRead
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopRead) {
		return 0, 0, err
	}
	return attempt, verdict, nil
}
