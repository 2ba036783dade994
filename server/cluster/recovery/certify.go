package recovery

// ShouldCertify flips the sticky certified flag (step 5): the runtime owner,
// not yet certified, with every owned segment synced.
//
// It is not gated on being the map's preferred primary (a re-homed owner that
// pulled everything correctly then never certified, re-queuing its pulls
// forever and never registering as converged), and there is deliberately no
// "no live replica, so certify my emptiness" shortcut here: certifying an
// empty non-primary while a temporarily down replica still holds the data
// would let that replica later sync from the empty node and lose everything.
func ShouldCertify(selfIsRuntimeActive, partitionCertified bool, ownedSegments, syncedSegments int) bool {
	return selfIsRuntimeActive && !partitionCertified && ownedSegments > 0 && syncedSegments >= ownedSegments
}
