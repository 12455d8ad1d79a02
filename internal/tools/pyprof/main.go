package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/py"
)

func main() {
	f, _ := os.Create("/tmp/py.prof")
	pprof.StartCPUProfile(f)
	defer pprof.StopCPUProfile()
	start := time.Now()
	ctx := context.Background()
	home, _ := os.UserCacheDir()
	rt, err := wasmgate.New(ctx, wasmgate.WithKind(py.Kind()), wasmgate.WithCompilationCacheDir(home+"/wasmgate"),
		wasmgate.WithExecutor("triv", wasmgate.ExecutorSource{Python: os.Args[1]}),
		wasmgate.WithAction("triv", wasmgate.Route{Executor: "triv", Version: "*"}))
	if err != nil {
		panic(err)
	}
	fmt.Println("new", time.Since(start))
	res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "triv", Payload: json.RawMessage(`{}`)})
	fmt.Println("exec", time.Since(start), res.Status, string(res.Output), err)
}
