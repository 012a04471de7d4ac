package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
)

// joinLogEvery bounds how often a node that keeps failing to join says so.
const joinLogEvery = 10 * time.Second

// joinLogged is front.JoinCluster that logs the last answer every
// joinLogEvery while it keeps failing (a --join address that is not a
// placementd member, a wrong port, a cluster not up yet), so that a node
// stuck at "not a member (yet)" says why. JoinCluster is retried in
// windows of joinLogEvery (joining is idempotent); one that ends before
// its window did not fail for want of time (a refused secret) and is
// returned.
func joinLogged(ctx context.Context, node *cluster.Node, targets []string, secret string, nonVoter bool, log *slog.Logger) error {
	start := time.Now()
	for {
		window, cancel := context.WithTimeout(ctx, joinLogEvery)
		err := front.JoinCluster(window, node, targets, secret, nonVoter)
		exhausted := window.Err() != nil
		cancel()
		if err == nil || ctx.Err() != nil || !exhausted {
			return err
		}
		log.Warn("not a member yet: joining keeps failing, retrying; --join must name API addresses (--http-addr) of the cluster's members", "last_error", err.Error(),
			"trying_for", time.Since(start).Round(time.Second).String(), "join", targets)
	}
}
