package main

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
)

// metricsAccess decides who may read /metrics. A scraper gets a
// credential of its own, --metrics-token, which opens /metrics and
// nothing else: the cluster secret also keys Raft's TLS, joins and
// removes members and downloads the whole state, which a monitoring
// system must not hold. The secret still opens /metrics (its holder may
// do everything anyway). A node with neither (`make run`) answers
// loopback callers, so a local Prometheus can scrape a dev node.
type metricsAccess struct {
	token, secret string
}

// metricsAccessOf is the scrape access serve's flags give.
func metricsAccessOf(c *serveConfig) metricsAccess {
	return metricsAccess{token: c.metricsToken, secret: c.cluster.secret}
}

// metricsTokenHint names what to set, in the refusals and the docs.
const metricsTokenHint = "set --metrics-token (PLACEMENTD_METRICS_TOKEN) on the node and scrape with \"Authorization: Bearer TOKEN\", or serve /metrics on a private --metrics-addr"

// check reports the refusal for r (status 0: serve it). onAPIPort: the
// API's listener, where the cluster secret and, on a node with neither
// credential, loopback callers are let in; --metrics-addr's listener
// serves everyone unless a token is set (it is private by configuration).
func (a metricsAccess) check(r *http.Request, onAPIPort bool) (status int, detail string) {
	auth := []byte(r.Header.Get("Authorization"))
	if a.token != "" && subtle.ConstantTimeCompare(auth, []byte("Bearer "+a.token)) == 1 {
		return 0, ""
	}
	if !onAPIPort {
		if a.token == "" {
			return 0, ""
		}
		return http.StatusUnauthorized, "/metrics needs the metrics token (Authorization: Bearer TOKEN, the node's --metrics-token)."
	}
	if a.secret != "" && subtle.ConstantTimeCompare(auth, []byte("Bearer "+a.secret)) == 1 {
		return 0, ""
	}
	if a.token == "" && a.secret == "" {
		if loopbackAddr(r.RemoteAddr) {
			return 0, ""
		}
		return http.StatusForbidden, "/metrics answers only loopback callers on a node without a metrics token or cluster secret: " + metricsTokenHint + "."
	}
	return http.StatusUnauthorized, "/metrics needs \"Authorization: Bearer TOKEN\" with the node's metrics token (--metrics-token) or the cluster secret."
}

// guard serves next to the requests check lets through.
func (a metricsAccess) guard(next http.Handler, onAPIPort bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, detail := a.check(r, onAPIPort); status != 0 {
			writeJSONError(w, status, detail)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkMetricsToken refuses a metrics token that would open more than
// /metrics: one equal to the cluster secret.
func checkMetricsToken(token, secret string) error {
	if token != "" && token == secret {
		return errors.New("--metrics-token must differ from --cluster-secret: the token is given to scrapers and opens /metrics only")
	}
	return nil
}

// writeJSONError answers in Placement's error format.
func writeJSONError(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
		"status": status, "title": http.StatusText(status), "detail": detail,
		"code": "placement.undefined_code",
	}}})
}
