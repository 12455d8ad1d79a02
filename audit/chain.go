package audit

import "fmt"

// Chain is the hash chain of a log kept where several writers append to it
// (the records of a JetStream stream, one per message): a writer follows
// the records stored, checking each exactly as Verify does, and links its
// own onto the last one it followed. Whoever stores a linked record first
// wins its seq; a writer that loses follows what was stored and links again.
//
// A Chain is not safe for concurrent use.
type Chain struct {
	v *verifier
}

// NewChain returns the chain of an empty log.
func NewChain() *Chain { return &Chain{v: newVerifier()} }

// Seq is the seq of the last record followed (0 for none).
func (c *Chain) Seq() uint64 { return c.v.seq }

// Follow checks line, one record and its newline, as the next line of the
// log, and moves the chain past it. It returns the record.
//
// # Errors
//
// A *ChainError (errors.Is ErrChainBroken) when the line is not the next
// record of an intact chain; the chain does not move.
func (c *Chain) Follow(line []byte) (Record, error) {
	if err := c.v.check(line); err != nil {
		return Record{}, err
	}
	if c.v.gap != nil {
		// A stored record's seq is its position: no line follows to tell
		// a removed record from reordered ones.
		err := c.v.gap
		c.v.gap = nil
		return Record{}, err
	}
	return cloneRecord(c.v.last), nil
}

// Link links rs, in order, as the records that follow the last one
// followed, as every Sink links a record: it returns them as they are to be
// stored, and their lines (each with its newline). The chain does not move:
// Follow the lines once stored.
//
// # Errors
//
// ErrInvalidRecord (wrapped) when a record breaks the schema, or is a
// verdict that answers no unanswered attempt (of the log or of rs before
// it), or differs from its attempt.
func (c *Chain) Link(rs []Record) ([]Record, [][]byte, error) {
	ch := chain{seq: c.v.seq, prev: c.v.prev, open: make(map[string]attempt, len(c.v.open))}
	for h, a := range c.v.open {
		ch.open[h] = a.attempt
	}
	out := make([]Record, len(rs))
	lines := make([][]byte, len(rs))
	for i, r := range rs {
		p, err := prepare(r)
		if err != nil {
			return nil, nil, fmt.Errorf("record %d of %d: %w", i+1, len(rs), err)
		}
		rec, line, _, err := ch.link(nil, p)
		if err != nil {
			return nil, nil, err
		}
		out[i], lines[i] = rec, line
	}
	return out, lines, nil
}
