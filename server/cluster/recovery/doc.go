// Package recovery holds the restart-recovery policies of R-REP-6: five
// pure predicates, one per file, that let a restarted owner regain its data
// from the replicas that kept it instead of trusting its own emptiness.
//
// A node holding zero records for a segment it owns cannot tell, from local
// information alone, whether it is empty because it just restarted (it must
// pull its data) or because it authoritatively deleted those keys while a
// replica was briefly down (pulling would resurrect them). So no rule here
// looks at emptiness. They route every decision through a sticky,
// partition-level fact: certified — "my startup sync finished and my store is
// authoritative" — set only on proof, never assumed.
//
// Each policy is a function of a few booleans and revisions with no I/O; the
// table tests name the failure each row prevents. It is a leaf package.
package recovery
