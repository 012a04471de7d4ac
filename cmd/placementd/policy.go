package main

import (
	"log/slog"

	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/httpapi/policy"
)

// newAuthorizer builds the policy enforcer from the serve flags. Warnings
// about the policy file (unknown rules and the like) are logged; a file
// that cannot be read or parsed stops the server.
func newAuthorizer(c *serveConfig, log *slog.Logger) (httpapi.Authorizer, error) {
	e, warnings, err := policy.New(policy.Options{
		File:               c.policyFile,
		Dirs:               splitList(c.policyDirs),
		EnforceNewDefaults: c.policyEnforceNewDefaults,
		EnforceScope:       c.policyEnforceScope,
	})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("policy file", "warning", w)
	}
	return e, nil
}
