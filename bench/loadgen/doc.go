// Package loadgen drives the Placement API of any endpoint (placementd or
// upstream Placement) with a scheduler-like workload and checks the result.
//
// A run sets up a fleet of compute nodes (VCPU, MEMORY_MB and DISK_GB
// inventories, traits, aggregates each served by a sharing DISK_GB
// provider, optionally two NUMA children per node), then runs timed
// phases with concurrent clients:
//
//   - scheduler: GET /allocation_candidates with a limit, pick one at
//     random, PUT /allocations/{new consumer} with consumer_generation null;
//     on 409 try another candidate, then query again;
//   - put: PUT /allocations/{new consumer} straight onto a random node;
//   - put-paced: the same PUTs offered at a fixed rate (Config.PacedRate)
//     rather than as fast as the server answers, for write latency below
//     saturation;
//   - post: POST /allocations creating two consumers at once;
//   - usages: GET /resource_providers/{uuid}/usages and GET /usages;
//   - delete: DELETE /allocations/{consumer} of half the consumers made;
//   - gate: upstream's performance gate (gate/perfload-runner.sh) as
//     `ab -c 10 -n 500` sends it: 500 GET /allocation_candidates of one
//     query (a trait, an aggregate, no limit, the latest microversion)
//     from 10 concurrent clients, whatever Clients and Duration say; three
//     rounds, the round of median rate reported (GateRounds).
//
// It ends by reading every provider's inventories, usages and allocations
// back, checking that no usage exceeds capacity and that every consumer
// it counted as created (and not deleted) holds exactly what it claimed.
//
// It imports nothing of placementd (it speaks HTTP to any Placement), so
// that the same workload measures upstream and placementd alike.
package loadgen
