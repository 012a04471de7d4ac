// Package difftest is the differential test against upstream Placement: it
// generates random valid and invalid Placement requests from a seed (every
// route, microversions 1.0 to 1.39, odd headers, mutated and malformed
// bodies), sends the same sequence to upstream Placement (Debian's
// python3-placement on SQLite, started by the test) and to placementd (the
// real binary over real HTTP), and compares every answer: status, headers
// (but for those that legitimately differ: dates, request ids, the
// server's) and body (byte for byte, except where upstream's order is
// undefined: there as JSON with that order left out). Each target's
// generated uuids are mapped to the step that created them. A divergent
// sequence is shrunk to a short reproduction.
//
// It imports nothing of placementd: it talks to both servers over HTTP
// only. `make difftest SEED=N SEEDS=N STEPS=N` runs it (difftest_test.go);
// `go test` alone runs seed 1 for 300 requests, and skips it where
// python3-placement is not installed (unless PLACEMENTD_REQUIRE_UPSTREAM
// is set, as in CI).
package difftest
