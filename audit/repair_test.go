package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRepairCutsATornTail(t *testing.T) {
	lines := memoryLog(t, 5)
	for _, tc := range []struct {
		name string
		keep int    // complete lines kept
		torn string // what follows them
	}{
		{"half a record", 4, lines[4][:len(lines[4])/2]},
		{"a record without its newline", 4, strings.TrimSuffix(lines[4], "\n")},
		{"after an unanswered attempt", 3, lines[3][:50]},
		{"nothing but a torn line", 0, lines[0][:10]},
		// A crash can leave the file's size past the data that reached the
		// disk: in space allocated ahead (FileSink reserves it), what was
		// never written reads as zeros.
		{"zeros past the last record", 5, strings.Repeat("\x00", 4096)},
		{"a torn record, then zeros", 4, lines[4][:30] + strings.Repeat("\x00", 4066)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			good := strings.Join(lines[:tc.keep], "")
			require.NoError(t, os.WriteFile(path, []byte(good+tc.torn), 0o600))
			_, err := OpenFile(path)
			require.ErrorIs(t, err, ErrTornTail)

			rep, err := Repair(path)
			require.NoError(t, err)
			assert.Equal(t, tc.keep, rep.Records)
			assert.Equal(t, tc.keep+1, rep.CutLine)
			assert.Equal(t, len(tc.torn), rep.CutBytes)
			assert.True(t, strings.HasPrefix(rep.TornPath, path+".torn-"), rep.TornPath)
			assert.Equal(t, good, readFile(t, path), "the log is cut back to its last complete record")
			assert.Equal(t, tc.torn, readFile(t, rep.TornPath), "the cut bytes are kept")

			s, err := OpenFile(path)
			require.NoError(t, err, "the log can be extended again")
			require.NoError(t, s.Close())
		})
	}
}

func TestRepairLeavesOtherLogsAlone(t *testing.T) {
	lines := memoryLog(t, 4)
	intact := strings.Join(lines, "")
	edited := lines[0] + strings.Replace(lines[1], "1.2.0", "1.2.1", 1) + lines[2] + lines[3][:20]
	dir := t.TempDir()
	for _, tc := range []struct {
		name, log string
		wantErr   string
	}{
		{"intact", intact, ""},
		{"broken before a torn end", edited, "log line 2: hash mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.log), 0o600))
			rep, err := Repair(path)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, RepairReport{Records: 4}, rep)
			} else {
				require.ErrorIs(t, err, ErrChainBroken)
				assert.NotErrorIs(t, err, ErrTornTail)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Contains(t, err.Error(), "only a torn last line is cut")
			}
			assert.Equal(t, tc.log, readFile(t, path), "not a byte changed")
			matches, _ := filepath.Glob(path + ".torn-*")
			assert.Empty(t, matches)
		})
	}
	_, err := Repair(filepath.Join(dir, "missing.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestRepairNeverOverwritesAnEarlierCut(t *testing.T) {
	lines := memoryLog(t, 2)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var kept []string
	for range 2 {
		require.NoError(t, os.WriteFile(path, []byte(lines[0]+lines[1][:9]), 0o600))
		rep, err := Repair(path)
		require.NoError(t, err)
		kept = append(kept, rep.TornPath)
	}
	if kept[0] == kept[1] {
		t.Fatalf("both cuts were kept in %s", kept[0])
	}
	for _, p := range kept {
		assert.Equal(t, lines[1][:9], readFile(t, p))
	}
}
