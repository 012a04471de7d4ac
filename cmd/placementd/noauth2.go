package main

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
)

// noauth2InsecureRemoteFlag lets noauth2 serve a non-loopback address.
const noauth2InsecureRemoteFlag = "auth-noauth2-insecure-remote"

// checkNoauth2 is the start-up guard of --auth-strategy noauth2, under
// which any caller is whoever its token names, admin included: it warns,
// and refuses an API address other hosts can reach unless the operator
// said --auth-noauth2-insecure-remote (docs/security.md, "noauth2").
func checkNoauth2(httpAddr string, insecureRemote bool, log *slog.Logger) error {
	if loopbackOnly(httpAddr) {
		log.Warn("--auth-strategy noauth2: no authentication, any caller can act as admin; loopback only")
		return nil
	}
	if !insecureRemote {
		return fmt.Errorf("--auth-strategy noauth2 lets any caller act as admin: it serves only a loopback --http-addr, not %q; use --auth-strategy keystone, or --%s for a test cluster on a network you trust", httpAddr, noauth2InsecureRemoteFlag)
	}
	log.Warn("--auth-strategy noauth2 on a non-loopback address (--"+noauth2InsecureRemoteFlag+"): no authentication, anyone who reaches the API can act as admin",
		"http_addr", httpAddr)
	return nil
}

// loopbackOnly reports whether addr (host:port) can only be reached from
// this host: a loopback IP or localhost. An empty host, an unspecified IP
// or any other name may be reachable from elsewhere.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
