// Command ferretdb runs the embeddable FerretDB v1 with the SQLite backend for the
// Gadget Code test and development harness. The plain `go install …/cmd/ferretdb`
// binary panics at start on a missing build/version/version.txt; the embeddable
// package does not need it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// SQLite settings for a test server, where a lost power supply may lose the last commits:
// statement journals in memory (each insert into a collection with a unique index keeps one,
// and spilled to a file it cost a fifth of an insert's CPU in write calls), the WAL synced at
// checkpoints, not on every commit (a crash of the process still loses nothing committed), and
// checkpoints left to the patched pool's background checkpointer (the automatic one only past
// 10,000 pages, ~40 MB).
const sqlitePragmas = "_pragma=temp_store(memory)&_pragma=synchronous(normal)&_pragma=wal_autocheckpoint(10000)"

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on")
	dataDir := flag.String("data", "data", "directory for the SQLite databases")
	verbose := flag.Bool("verbose", false, "log FerretDB's own messages to stderr")
	debugAddr := flag.String("debug-addr", "", "serve Go's pprof profiles on this address (off when empty)")
	flag.Parse()

	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb: cannot create data directory:", err)
		os.Exit(1)
	}

	var logOutput io.Writer = io.Discard
	if *verbose {
		logOutput = os.Stderr
	}
	logger := slog.New(slog.NewTextHandler(logOutput, &slog.HandlerOptions{Level: slog.LevelWarn}))

	instance, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Handler:   "sqlite",
		SQLiteURL: "file:" + *dataDir + "/?" + sqlitePragmas,
		Logger:    logger,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}

	if *debugAddr != "" {
		// For finding where FerretDB's time goes: go tool pprof http://<addr>/debug/pprof/profile
		go func() { fmt.Fprintln(os.Stderr, "ferretdb: debug server:", http.ListenAndServe(*debugAddr, nil)) }()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The harness waits for the port to answer; this line is for people reading logs.
	fmt.Println("ferretdb listening on", *listen)
	if err := instance.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}
