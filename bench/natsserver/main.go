// Command natsserver runs a NATS server with JetStream, storing on disk, in
// this process: what `make demo-cluster` and `make bench-cluster` start when
// Debian's nats-server is not installed. It is the server the cluster
// package's tests embed (github.com/nats-io/nats-server/v2, the version
// go.mod pins), with no configuration beyond a port and a store directory.
//
// It prints "ready nats://127.0.0.1:PORT" on stdout once it accepts
// connections, and stops on SIGINT or SIGTERM.
//
//	go run ./bench/natsserver [-port 4222] [-store DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 4222, "client port (-1 for any free port)")
	store := flag.String("store", "", "JetStream store directory (default: a new temporary directory, removed on exit)")
	flag.Parse()
	dir := *store
	if dir == "" {
		d, err := os.MkdirTemp("", "natsserver-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "natsserver:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	s, err := server.NewServer(&server.Options{
		Host: *host, Port: *port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsserver:", err)
		os.Exit(1)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		s.Shutdown()
		fmt.Fprintln(os.Stderr, "natsserver: not ready for connections within 20s")
		os.Exit(1)
	}
	fmt.Println("ready", s.ClientURL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	s.Shutdown()
	s.WaitForShutdown()
}
