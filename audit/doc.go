// Package audit keeps wasmgate's tamper-evident, digest-only record of every
// action: it turns JSON into RFC 8785 canonical bytes, digests them with
// BLAKE3, chains records into an append-only JSON Lines log — an attempt
// before an executor runs, a verdict after, naming its attempt — verifies
// such a log, and repairs one whose last append was cut short.
//
// A Record holds digests, identifiers and counters only. Raw input, raw
// output, the request's env and guest error text never reach this package's
// records, so a log can be shared for review without leaking payloads.
//
// # Notes
//
//   - Canonicalize is the one canonicalizer of the project: limits are measured
//     on its output, digests are taken over its output, and audit lines are
//     produced by it.
//   - The hash chain detects an edited, removed or reordered line anywhere
//     except the removal of trailing lines; keep VerifyReport.LastHash
//     somewhere else (a ticket, another system's log) to detect that too.
//   - A FileSink that cannot write fails closed and recovers by itself once
//     the disk has room again (see FileSink); HealthReporter says whether a
//     sink currently accepts records.
package audit
