// Package audit keeps wasmgate's tamper-evident, digest-only record of every
// action: it turns JSON into RFC 8785 canonical bytes, digests them with
// BLAKE3, chains one Record per action into an append-only JSON Lines log, and
// verifies such a log.
//
// A Record holds digests, identifiers and counters only. Raw input, raw
// output and guest error text never reach this package's records, so a log
// can be shared for review without leaking payloads.
//
// # Notes
//
//   - Canonicalize is the one canonicalizer of the project: limits are measured
//     on its output, digests are taken over its output, and audit lines are
//     produced by it.
//   - The hash chain detects an edited, removed or reordered line anywhere
//     except the removal of trailing lines; keep VerifyReport.LastHash
//     somewhere else (a ticket, another system's log) to detect that too.
package audit
