package recovery

// ShouldReverseSyncOwnedSegment decides whether an owned segment is pulled
// from a live replica rather than treated as locally authoritative (step 1).
//
// isMapPreferredPrimary is passed as documented context but deliberately not
// read: gating the pull on being the map's preferred primary left a
// re-homed or promoted-after-recovery owner empty forever while a live
// replica held every record. The signal is certification, not emptiness.
// liveNonSelfReplica guards against driving recovery from a dead source
// (recovery stuck forever, synced 0/N): with no live replica the owner is
// the only surviving copy.
func ShouldReverseSyncOwnedSegment(partitionCertified, isMapPreferredPrimary, liveNonSelfReplica bool) bool {
	_ = isMapPreferredPrimary
	return !partitionCertified && liveNonSelfReplica
}
