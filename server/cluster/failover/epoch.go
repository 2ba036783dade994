package failover

// NextEpoch proposes the epoch of an ownership change: one above base, and
// refused (ok=false) unless strictly above every epoch observed for the
// partition. The epoch is the fencing token: an old owner coming back with a
// stale epoch loses every comparison and can never take ownership back.
func NextEpoch(base, highestObserved uint64) (epoch uint64, ok bool) {
	next := base + 1
	if next <= highestObserved || next == 0 {
		return 0, false
	}
	return next, true
}

// AcceptWrite is the fence on the owner side: a node accepts a client write
// for a partition only while it is the active owner at the partition's
// current epoch. A node that was partitioned away and still believes it owns
// at an older epoch rejects (the client is redirected) instead of accepting
// writes nobody will ever see.
func AcceptWrite(selfIsActiveOwner bool, localEpoch, currentEpoch uint64) bool {
	return selfIsActiveOwner && localEpoch == currentEpoch
}
