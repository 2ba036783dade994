// Command zaris-server runs one Zaris node: it loads the configuration
// (flags > ZARIS_* environment > --config YAML file > defaults, see
// server.LoadConfig), starts the node and stops it gracefully on SIGINT or
// SIGTERM.
//
// Exit codes: 0 after a clean stop (and for --help, --version); 1 when the
// node failed to start, a service failed while running, or the graceful stop
// did not complete; 2 for a bad configuration or bad arguments.
//
// The command owns process concerns only (arguments, environment, signals,
// the log destination, exit codes); everything else lives in package server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zaris-io/zaris/server"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitConfig = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

func run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	cfg, err := server.LoadConfig(args, lookupEnv)
	switch {
	case errors.Is(err, server.ErrVersion):
		fmt.Fprintf(stdout, "zaris-server %s\n", server.Version())
		return exitOK
	case errors.Is(err, server.ErrHelp):
		server.Usage(stdout)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "zaris-server: %v\n(zaris-server --help lists the options)\n", err)
		return exitConfig
	}

	logger := server.NewLogger(stderr, cfg)
	tuneGC(cfg.MemoryMaxBytes, cfg.MemoryMaxRSS)
	node, err := server.NewNode(cfg, logger)
	if err != nil {
		// Everything NewNode refuses comes from the configuration (an
		// invalid value, unreadable TLS material).
		fmt.Fprintf(stderr, "zaris-server: %v\n", err)
		return exitConfig
	}

	// Listen for signals before starting, so that one arriving during
	// startup still stops the node cleanly.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)

	// SIGHUP re-reads the TLS material and the cluster secret (certificate
	// renewal, secret rotation) without a restart.
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	go func() {
		for range hups {
			logger.Info("SIGHUP received, reloading the TLS material and the cluster secret")
			if err := node.Reload(); err != nil {
				logger.Error("reload failed; the material that failed to load stays as it was", "err", err)
			}
		}
	}()

	if err := node.Start(context.Background()); err != nil {
		logger.Error("cannot start the node", "err", err)
		_ = node.Stop(context.Background())
		return exitFailed
	}

	code := exitOK
	select {
	case sig := <-signals:
		logger.Info("signal received, stopping", "signal", sig.String())
	case err := <-node.Failed():
		if errors.Is(err, server.ErrDecommissioned) {
			// Asked for (POST /v1/node/decommission): a normal exit, so
			// that a restart-on-failure policy leaves the node down.
			logger.Info("node decommissioned, stopping")
			break
		}
		logger.Error("a service failed, stopping", "err", err)
		code = exitFailed
	}
	// A second signal now terminates the process the default way, for an
	// operator who does not want to wait for the drain.
	signal.Stop(signals)

	// Stop is bounded by cfg.ShutdownTimeout.
	if err := node.Stop(context.Background()); err != nil {
		logger.Error("the node did not stop cleanly", "err", err)
		return exitFailed
	}
	return code
}
