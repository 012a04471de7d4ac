// Package httpapi is the thin adapter between HTTP and placementd: it
// serves the OpenStack Placement API (microversions 1.0 to 1.39) with
// gorilla/mux, turning each request into a read of the state (after the
// cluster's read barrier) or a command proposed through Raft, and each
// result into the status, headers and body upstream Placement would send.
//
// Common behaviour lives in middleware (request ids, microversion
// negotiation, noauth2, CORS, body limits; the admission of body decodes
// and candidate searches is admission.go, over httpapi/httpguard) and in the helpers of
// request.go and errors.go; each resource family has its own file of
// handlers. Request bodies are validated with the JSON schemas of
// httpapi/schema so that errors read exactly as upstream's.
//
// Routes, methods, microversion ranges, the Accept and content-type
// checks, policy rules and schemas by microversion are declared in one
// table (routes.go), as upstream's ROUTE_DECLARATIONS with its handlers'
// decorators; the dispatcher applies them, so handlers parse, call the
// domain and encode.
//
// httpapi imports cluster/backend only (the node's errors, the read
// options Backend.Read takes and the not-applied header), fsm/state and
// fsm/candidates for the domain; it must not import the node (cluster),
// its front (cluster/front), hashicorp/raft or its stores: it reaches Raft
// only through Backend (Apply, Read), so the API is testable over any
// backend and the cluster keeps sole charge of Raft. The front serves the
// reads it answers on a node through Server.ServeRead, with the options it
// chose for them.
package httpapi
