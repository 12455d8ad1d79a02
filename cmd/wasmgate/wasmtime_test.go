//go:build wasmtime

package main

// The command under test is built with the wasmtime engine too.
func init() { buildTags = "wasmtime" }
