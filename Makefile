# wasmgate — every target a newcomer needs. `make demo` and `make test` are
# the two that matter; see README.md.

GO      ?= go
BIN     := bin/wasmgate
PKGS    := ./...

.PHONY: all build test test-short check demo bench guests clean

all: build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/wasmgate

test:
	$(GO) test -race -count=1 $(PKGS)

test-short:
	$(GO) test -count=1 $(PKGS)

# Formatting, vet and module tidiness; fails on any diff they produce.
check:
	@out="$$(gofmt -l .)"; test -z "$$out" || { echo "$$out"; echo 'gofmt: the files above need formatting'; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) mod tidy
	git diff --exit-code -- go.mod go.sum

demo: build
	@bash scripts/demo.sh $(BIN)

bench:
	@bash scripts/bench.sh

# Rebuild every fixture in testdata/ from its source in guests/.
guests:
	bash guests/build.sh testdata

clean:
	rm -rf bin
