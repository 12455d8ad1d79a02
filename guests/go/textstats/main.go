// Command textstats is a wasmgate executor written in Go: a WASI command
// run under the virtual WASI profile.
//
// It reads the canonical JSON input from stdin, {"text":"..."}, and writes
// {"length":<runes>,"upper":<strings.ToUpper>,"words":<strings.Fields count>}
// to stdout. Bad input is reported on stderr with exit code 1, which wasmgate
// turns into an executor error.
//
// Build (see guests/build.sh):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags=-s -o textstats.wasm ./textstats
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

type input struct {
	Text *string `json:"text"`
}

// output's fields are declared in key order, so encoding/json writes them
// as canonical JSON orders them.
type output struct {
	Length int    `json:"length"`
	Upper  string `json:"upper"`
	Words  int    `json:"words"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "textstats:", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	data, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("input must be an object with a string field \"text\": %w", err)
	}
	if in.Text == nil {
		return errors.New(`missing field "text"`)
	}
	text := *in.Text
	out := output{
		Length: utf8.RuneCountInString(text),
		Upper:  strings.ToUpper(text),
		Words:  len(strings.Fields(text)),
	}
	// Not json.Marshal: it escapes <, > and & as \u003c..., which canonical
	// JSON does not. Encode adds a newline, which is dropped.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("encoding output: %w", err)
	}
	_, err = stdout.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return err
}
