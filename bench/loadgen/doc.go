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
//   - gate: upstream's performance gate (gate/perfload-runner.sh): 99
//     allocations claimed one at a time (the first allocation request of
//     the gate query with limit=5), then 500 GET /allocation_candidates of
//     that query (a trait, an aggregate, no limit, the latest microversion)
//     as `ab -c 10 -n 500` sends them, from 10 concurrent clients whatever
//     Clients and Duration say, each answer read and checked as ab checks
//     it (status, and length against the first answer's; only that first
//     answer, fetched before the round, is decoded); three rounds, the
//     round of median rate reported (GateRounds). The default workload
//     runs it first, on the fleet as set up, as upstream's gate job does;
//   - gate-new-conn: the gate's rounds again with a new connection for
//     every request, as ab without -k (upstream's gate) sends them;
//     (After the other phases have spread tens of thousands of allocations
//     over the fleet, placementd's answer reads providers scattered in
//     memory and costs a fifth to a third more CPU; restarted on the same
//     state it answers at the fresh rate again.)
//
// It ends by reading every provider's inventories, usages and allocations
// back, checking that no usage exceeds capacity and that every consumer
// it counted as created (and not deleted) holds exactly what it claimed.
//
// It imports nothing of placementd (it speaks HTTP to any Placement), so
// that the same workload measures upstream and placementd alike.
package loadgen
