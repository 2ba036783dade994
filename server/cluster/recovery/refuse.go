package recovery

// ShouldRefuse is the source side (step 4): may this node refuse a peer's
// request to sync a segment from it?
//
// Refusing whenever the owner is uncertified left replicas stuck at zero
// while this node held the authoritative copy (a promoted primary whose
// promotion never certified, or an owner after a total-partition recovery).
// Since the receiver applies every chunk revision-bounded, serving real data
// is always safe; the only unsafe case is the owner that is uncertified,
// unsynced and truly empty — serving its hole could let the requester certify
// against it.
func ShouldRefuse(selfIsRuntimeOwnerMapPrimary, partitionCertified, segmentSynced, selfHoldsSegmentData bool) bool {
	return selfIsRuntimeOwnerMapPrimary && !partitionCertified && !segmentSynced && !selfHoldsSegmentData
}
