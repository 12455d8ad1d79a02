module github.com/wasmgate/wasmgate

go 1.26

require (
	github.com/evanw/esbuild v0.28.2
	github.com/stretchr/testify v1.11.1
	github.com/tetratelabs/wazero v1.12.0
	github.com/zeebo/blake3 v0.2.4
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
