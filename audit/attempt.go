package audit

// attempt is what a verdict repeats of the attempt it answers: the request
// and the executor, as the attempt recorded them before the executor ran.
type attempt struct {
	action, executorID, executorVersion, moduleDigest string
	inputDigest, envDigest, traceID, tsUTC            string
	schemaDigest                                      string // "" for none
}

func attemptOf(r *Record) attempt {
	a := attempt{
		action: r.Action, executorID: r.ExecutorID, executorVersion: r.ExecutorVersion, moduleDigest: r.ModuleDigest,
		inputDigest: r.InputDigest, traceID: r.TraceID, tsUTC: r.TsUTC,
	}
	if r.EnvDigest != nil {
		// A digest is never empty, so "" stands for null without ambiguity.
		a.envDigest = *r.EnvDigest
	}
	if r.SchemaDigest != nil {
		a.schemaDigest = *r.SchemaDigest
	}
	return a
}

// differs names the first member in which b differs from a, or "" when
// they agree.
func (a attempt) differs(b attempt) string {
	switch {
	case a.action != b.action:
		return "action"
	case a.executorID != b.executorID:
		return "executor_id"
	case a.executorVersion != b.executorVersion:
		return "executor_version"
	case a.moduleDigest != b.moduleDigest:
		return "module_digest"
	case a.inputDigest != b.inputDigest:
		return "input_digest"
	case a.envDigest != b.envDigest:
		return "env_digest"
	case a.schemaDigest != b.schemaDigest:
		return "schema_digest"
	case a.traceID != b.traceID:
		return "trace_id"
	case a.tsUTC != b.tsUTC:
		return "ts_utc"
	}
	return ""
}

// openChange is what linking one record did to the set of unanswered
// attempts, kept so that a FileSink cutting records back can undo it.
type openChange struct {
	hash   string  // the attempt's hash; empty when the record changed nothing
	opened bool    // the record was the attempt (else a verdict that answered it)
	was    attempt // what the answered attempt was, to reopen it
}
