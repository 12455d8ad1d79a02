module github.com/wasmgate/wasmgate

go 1.26

require (
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
	golang.org/x/sys v0.44.0 // indirect
)
