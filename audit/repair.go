package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// RepairReport says what Repair found and did.
type RepairReport struct {
	// Records is how many complete records the log holds (after the cut).
	Records int
	// CutLine is the 1-based line number of the torn line that was cut, 0
	// when the log was intact and nothing was cut.
	CutLine int
	// CutBytes is how many bytes were cut.
	CutBytes int
	// TornPath is the file the cut bytes were kept in.
	TornPath string
}

// Repair cuts a torn tail (a last line without its newline, which an append
// cut short by a crash or a full disk leaves) off the audit log at path,
// back to the end of the last complete record, so that a sink can extend
// the log again. The cut bytes are first kept, fsynced, in a new file
// beside the log, path + ".torn-" + the UTC time (20060102T150405Z); then
// the log is truncated and fsynced. An intact log is left as it is.
//
// Repair holds the log's lock while it works, waiting for another holder
// as OpenFile does (WithLockWait).
//
// # Errors
//
// A log broken anywhere else than in a torn last line (an edited, removed
// or reordered record) is not changed: the error wraps the *ChainError that
// names the line, and the report covers the records before it. Such damage
// is evidence; cutting it away is not a repair.
func Repair(path string, opts ...FileOption) (RepairReport, error) {
	o := newFileOptions(opts)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return RepairReport{}, fmt.Errorf("audit: repair: %w", err)
	}
	defer f.Close()
	if err := lockRegular(f, o.lockWait); err != nil {
		return RepairReport{}, fmt.Errorf("audit: repair %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return RepairReport{}, fmt.Errorf("audit: repair %s: read: %w", path, err)
	}
	rep, verr := Verify(bytes.NewReader(data))
	out := RepairReport{Records: rep.Records}
	switch {
	case verr == nil:
		return out, nil
	case !errors.Is(verr, ErrTornTail):
		return out, fmt.Errorf("audit: repair %s: %w; only a torn last line is cut, and this log is broken before its end", path, verr)
	}
	var ce *ChainError
	errors.As(verr, &ce)
	cut := bytes.LastIndexByte(data, '\n') + 1
	torn := data[cut:]
	tornPath, err := keepTorn(path, torn)
	if err != nil {
		return out, fmt.Errorf("audit: repair %s: keep the torn bytes: %w (the log is unchanged)", path, err)
	}
	if err := truncateSync(f, int64(cut)); err != nil {
		return out, fmt.Errorf("audit: repair %s: cut the torn line: %w (its bytes are also in %s)", path, err, tornPath)
	}
	out.CutLine, out.CutBytes, out.TornPath = ce.Line, len(torn), tornPath
	return out, nil
}

// keepTorn writes torn to a new file beside path, durably, and returns its
// name. An existing file is never overwritten: a second repair in the same
// second gets a numbered name.
func keepTorn(path string, torn []byte) (string, error) {
	base := path + ".torn-" + time.Now().UTC().Format("20060102T150405Z")
	name := base
	for n := 2; ; n++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			name = base + "." + strconv.Itoa(n)
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(torn)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDir(filepath.Dir(name))
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}
