// Command serve runs the local MongoDB-compatible test server (FerretDB on
// SQLite) until Ctrl-C, with its data kept in a folder, so that a real
// Fluent Bit can be pointed at it. make serve runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:27017", "address to listen on")
	dir := flag.String("data", "build/serve-data", "folder the data is kept in")
	flag.Parse()
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	abs, _ := filepath.Abs(*dir)
	srv, err := mongotest.StartFerret(abs, *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: starting the test server on %s: %v (is the port taken? set PORT=)\n", *addr, err)
		os.Exit(1)
	}
	fmt.Printf("MongoDB-compatible test server (FerretDB) listening: %s\ndata in %s; Ctrl-C stops it\n", srv.URI, abs)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	srv.Stop()
	fmt.Println("stopped; the data stays in", abs)
}
