// Go guests for wasmgate. A module of their own, so that the main module's
// go build/vet/test ./... never sees these GOOS=wasip1 programs.
module wasmgate.guests

go 1.26
