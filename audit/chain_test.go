package audit

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChainLinksAsSinksDo: records linked by a Chain and followed once
// stored are the log a MemorySink writes for the same records, and two
// writers following each other's lines keep one chain that Verify accepts.
func TestChainLinksAsSinksDo(t *testing.T) {
	mem := NewMemorySink()
	a, b := NewChain(), NewChain()
	var log bytes.Buffer
	for i := range 6 {
		w, other := a, b
		if i%2 == 1 {
			w, other = b, a
		}
		recs, lines, err := w.Link([]Record{testRecord(i)})
		require.NoError(t, err)
		want, err := mem.Append(context.Background(), testRecord(i))
		require.NoError(t, err)
		assert.Equal(t, want, recs[0])
		for _, c := range []*Chain{w, other} {
			_, err := c.Follow(lines[0])
			require.NoError(t, err)
		}
		log.Write(lines[0])
	}
	var memLog bytes.Buffer
	_, err := mem.WriteTo(&memLog)
	require.NoError(t, err)
	assert.Equal(t, memLog.String(), log.String())
	rep, err := Verify(&log)
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Records)
	assert.EqualValues(t, 6, a.Seq())
}

// TestChainRefuses: a line that is not the next record (edited, or one
// the chain has followed already) does not move the chain, and a verdict
// naming no unanswered attempt is not linked.
func TestChainRefuses(t *testing.T) {
	c := NewChain()
	_, lines, err := c.Link([]Record{testRecord(0), testRecord(1)})
	require.NoError(t, err)
	_, err = c.Follow(lines[0])
	require.NoError(t, err)

	_, err = c.Follow(lines[0])
	assert.True(t, errors.Is(err, ErrChainBroken), "a record followed twice: %v", err)
	edited := bytes.Replace(lines[1], []byte(`"SUCCESS"`), []byte(`"FAILED"`), 1)
	_, err = c.Follow(edited)
	assert.True(t, errors.Is(err, ErrChainBroken), "an edited record: %v", err)
	assert.EqualValues(t, 1, c.Seq(), "the chain did not move")
	_, err = c.Follow(lines[1])
	require.NoError(t, err)

	v := testRecord(2)
	missing := Digest([]byte("no such attempt"))
	v.AttemptHash = &missing
	_, _, err = c.Link([]Record{v})
	assert.ErrorIs(t, err, ErrInvalidRecord)
}
