// Command placement-load drives any Placement API endpoint (placementd or
// upstream Placement) with the scheduler workload of package loadgen and
// prints what it measured and verified.
//
//	placement-load -endpoints http://127.0.0.1:8778 -nodes 1000 -clients 16 -label placementd -json pd.json
//	placement-load table upstream.json pd.json ...
//
// The first form exits 1 when the end-of-run verification fails; the
// second prints the reports side by side with ratios to the first.
//
// It imports only bench/loadgen and must not import any other package of
// placementd: it measures any Placement endpoint over HTTP alone.
package main
