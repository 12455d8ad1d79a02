// Package cluster runs the governed pipeline across machines on NATS
// JetStream: fronts publish action requests to a work-queue stream, workers
// (each a pipeline of its own) pull and execute them, and every worker
// appends to one audit hash chain kept in a stream. Modules and JS tools
// are content-addressed in an Object Store bucket, the registry that names
// them is a key of a KV bucket.
//
// Nothing here is home-made: the queue, the deduplication of retried
// publishes, replication and storage are JetStream's. What this package adds
// is the mapping: which subject and header carries what, and how a worker
// keeps the one chain.
//
// The embedded default (one process, a file audit log) does not use this
// package.
package cluster
