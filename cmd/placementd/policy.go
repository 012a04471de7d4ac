package main

import (
	"log/slog"

	"github.com/placementd/placementd/httpapi"
)

// newAuthorizer builds the policy enforcer from the serve flags.
func newAuthorizer(c *serveConfig, log *slog.Logger) (httpapi.Authorizer, error) {
	return nil, nil
}
