// Package migration holds the rules of live partition migration (R-MIG-2,
// R-MIG-3) as pure functions, each with a table test naming the failure it
// prevents: when the source may be fenced, whether the target proved it
// holds everything the fenced source acknowledged (and dominates every live
// replica), and whether the source may drop its copy after the flip.
//
// The protocol that uses them lives in server/cluster (the leader's
// driver) and server/replication (the source's fence and the copy stream).
package migration
