// Package transparency makes an audit log (package audit) a transparency
// log that outsiders can check: its records, in log order, are the leaves
// of an RFC 6962 Merkle tree (SHA-256), and the package signs checkpoints
// of that tree (C2SP tlog-checkpoint, as signed notes), proves that a
// record is in it (RFC 6962 inclusion proofs, written as C2SP tlog-proof
// files), proves that one checkpoint extends another (consistency proofs),
// serves the tree as C2SP tlog-tiles, and checks all of these.
//
// A leaf is a record's line, without its newline: leaf index = seq − 1,
// attempts and verdicts alike. The BLAKE3 hash chain the records carry
// stays; the tree adds what the chain cannot give: a proof about one
// record that does not hand over the log, and signed sizes, so that a
// truncated or rewritten log, or two different histories shown to two
// parties, are caught.
//
// A Server publishes a Tree over HTTP as C2SP tlog-tiles. A Witness (C2SP
// tlog-witness) cosigns a log's checkpoints only when they extend the last
// it cosigned, and Cosign asks one to; a Policy (C2SP tlog-policy) says
// which logs and how many witnesses a verifier requires.
//
// # Notes
//
//   - Tree keeps its hashes in a directory beside the log (LOG.tlog), so
//     that a checkpoint, a proof or a tile reads O(log n) hashes and never
//     the whole log. The directory is derived from the log and can be
//     deleted: it is rebuilt from the log, which is the record.
//   - The Merkle tree's hashes, proofs and tiles are golang.org/x/mod's
//     sumdb/tlog; signed notes are its sumdb/note.
package transparency
