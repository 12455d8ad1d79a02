package tscheck

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// residentBytes is the resident memory of process pid, from the second
// field of /proc/PID/statm (in pages).
func residentBytes(pid int) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, err
	}
	fields := bytes.Fields(raw)
	if len(fields) < 2 {
		return 0, fmt.Errorf("tscheck: /proc/%d/statm has %d fields", pid, len(fields))
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tscheck: /proc/%d/statm: %w", pid, err)
	}
	return pages * int64(os.Getpagesize()), nil
}
