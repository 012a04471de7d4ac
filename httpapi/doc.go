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
package httpapi
