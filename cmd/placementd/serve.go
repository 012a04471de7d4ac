package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
)

type serveConfig struct {
	httpAddr, raftAddr, nodeID, dataDir string
	policyFile                          string
	policyEnforceNewDefaults            bool
	policyEnforceScope                  bool
	corsAllowedOrigin, corsAllowHeaders string
	incompleteProject, incompleteUser   string
	authStrategy                        string
	logFormat, logLevel                 string
}

func serveFlags(fs *flag.FlagSet) *serveConfig {
	c := &serveConfig{}
	fs.StringVar(&c.httpAddr, "http-addr", "127.0.0.1:8778", "address the Placement API listens on")
	fs.StringVar(&c.raftAddr, "raft-addr", "127.0.0.1:8779", "address Raft listens on (port 0: any free port)")
	fs.StringVar(&c.nodeID, "node-id", "", "this node's Raft id (default: the hostname, kept in the data dir)")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory for the Raft log, snapshots and node identity")
	fs.StringVar(&c.policyFile, "policy-file", "", "oslo.policy YAML/JSON file overriding policy rules")
	fs.BoolVar(&c.policyEnforceNewDefaults, "policy-enforce-new-defaults", false, "use only the new policy defaults, as [oslo_policy] enforce_new_defaults")
	fs.BoolVar(&c.policyEnforceScope, "policy-enforce-scope", true, "refuse tokens whose scope a rule does not allow, as [oslo_policy] enforce_scope")
	fs.StringVar(&c.corsAllowedOrigin, "cors-allowed-origin", "", "comma-separated origins allowed by CORS (empty: no CORS)")
	fs.StringVar(&c.corsAllowHeaders, "cors-allow-headers", "", "comma-separated extra request headers a CORS preflight may allow")
	fs.StringVar(&c.incompleteProject, "incomplete-consumer-project-id", "00000000-0000-0000-0000-000000000000", "project given to consumers written before microversion 1.8")
	fs.StringVar(&c.incompleteUser, "incomplete-consumer-user-id", "00000000-0000-0000-0000-000000000000", "user given to consumers written before microversion 1.8")
	fs.StringVar(&c.authStrategy, "auth-strategy", "noauth2", "authentication: noauth2")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return c
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// nodeID returns the configured id, or the one this data dir was first
// started with, or a new one (the hostname) remembered in the data dir.
func nodeID(configured, dataDir string) (string, error) {
	path := filepath.Join(dataDir, "node-id")
	if b, err := os.ReadFile(path); err == nil {
		stored := strings.TrimSpace(string(b))
		if configured != "" && configured != stored {
			return "", fmt.Errorf("data dir %s belongs to node %q, not %q", dataDir, stored, configured)
		}
		return stored, nil
	}
	id := configured
	if id == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "node1"
		}
		id = host
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", err
	}
	return id, os.WriteFile(path, []byte(id+"\n"), 0o640)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("placementd serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := envDefaults(fs); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log, err := newLogger(c.logFormat, c.logLevel)
	if err != nil {
		return err
	}
	if c.authStrategy != "noauth2" {
		return fmt.Errorf("--auth-strategy %q is not supported (noauth2)", c.authStrategy)
	}
	id, err := nodeID(c.nodeID, c.dataDir)
	if err != nil {
		return err
	}
	authz, err := newAuthorizer(c, log)
	if err != nil {
		return err
	}

	machine := fsm.New()
	node, err := cluster.Open(cluster.Config{
		NodeID: id, RaftAddr: c.raftAddr, DataDir: c.dataDir, Bootstrap: true,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr, JSONFormat: c.logFormat == "json"}),
	}, machine)
	if err != nil {
		return err
	}
	api := httpapi.New(node, httpapi.Config{
		IncompleteConsumerProjectID: c.incompleteProject,
		IncompleteConsumerUserID:    c.incompleteUser,
		CORSAllowedOrigins:          splitList(c.corsAllowedOrigin),
		CORSAllowHeaders:            splitList(c.corsAllowHeaders),
		Logger:                      log,
		Authorizer:                  authz,
	})
	ln, err := net.Listen("tcp", c.httpAddr)
	if err != nil {
		node.Shutdown()
		return err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	log.Info("placementd serving", "node", id, "http", ln.Addr().String(), "raft", node.RaftAddr(), "data_dir", c.dataDir)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err = <-errc:
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(ctx)
		cancel()
	}
	if serr := node.Shutdown(); err == nil || errors.Is(err, http.ErrServerClosed) {
		err = serr
	}
	return err
}
