package hybrid

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/zaris-io/zaris/sdk"
)

// AllTag is the tag every entry carries implicitly: RemoveByTag(ctx, "*")
// invalidates the whole cache (every instance, both tiers).
const AllTag = "*"

// markerKey is where a tag's invalidation timestamp lives. Tags are hashed
// (SHA-256, first 128 bits, hex), so any string — spaces, braces, control
// bytes, megabytes — is a valid tag and maps to a short, fixed-length key
// without a Redis hash tag, spread over the cluster like any key.
func (h *Cache) markerKey(tag string) string {
	sum := sha256.Sum256([]byte(tag))
	return h.opts.KeyPrefix + "t:" + hex.EncodeToString(sum[:16])
}

// normalizeTags copies tags without empties, duplicates or "*" (which every
// entry has implicitly). The copy keeps the caller's slice from escaping.
func normalizeTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t != "" && t != AllTag && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func encodeStamp(ts int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(ts)) }

func decodeStamp(r sdk.Result) (int64, bool) {
	if !r.OK() || len(r.Value) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(r.Value)), true
}

// tagsValid: no tag of the entry (nor "*") was invalidated at or after
// created.
func (h *Cache) tagsValid(ctx context.Context, tags []string, created int64) bool {
	if h.tagTime(ctx, AllTag) >= created {
		return false
	}
	for _, t := range tags {
		if h.tagTime(ctx, t) >= created {
			return false
		}
	}
	return true
}

// tagTime is the latest invalidation of tag known locally. The table is the
// materialized view of L1's markers: a tag not in it is read from L1 once
// (absent = 0, kept until the janitor's next pass).
func (h *Cache) tagTime(ctx context.Context, tag string) int64 {
	h.tagsMu.RLock()
	ts, ok := h.tags[tag]
	h.tagsMu.RUnlock()
	if ok {
		return ts
	}
	mk := h.markerKey(tag)
	r, err := h.l1.Get(ctx, mk)
	if err == nil {
		ts, _ = decodeStamp(r)
	}
	h.tagsMu.Lock()
	defer h.tagsMu.Unlock()
	// A marker change learned from the store while L1 was being read.
	ts = max(ts, h.markerTS[mk])
	if cur, ok := h.tags[tag]; ok && cur >= ts {
		return cur
	}
	h.tags[tag] = ts
	h.markerTag[mk] = tag
	if ts > 0 {
		h.tagEpoch.Add(1)
	}
	return ts
}

// learnTag records that tag was invalidated at ts (if that is news), in
// the table and in L1's marker.
func (h *Cache) learnTag(ctx context.Context, tag string, ts int64) {
	mk := h.markerKey(tag)
	h.tagsMu.Lock()
	if cur, ok := h.tags[tag]; ok && cur >= ts {
		h.tagsMu.Unlock()
		return
	}
	h.tags[tag] = ts
	h.markerTag[mk] = tag
	h.tagEpoch.Add(1)
	h.tagsMu.Unlock()
	if tag == AllTag {
		h.mat.Clear() // every copy is now a miss: free them at once
	}
	if err := h.raiseMarker(ctx, h.l1, mk, ts); err != nil {
		h.stats.l1Errors.Add(1)
		h.log.Debug("hybrid: L1 tag marker", "tag", tag, "err", err)
	}
}

// raiseMarker sets the marker at key to ts unless it already holds a later
// time (compare-and-set, so concurrent invalidations never move it back).
func (h *Cache) raiseMarker(ctx context.Context, c *sdk.Client, key string, ts int64) error {
	const attempts = 16
	for range attempts {
		r, err := c.Get(ctx, key)
		if err != nil {
			return err
		}
		opts := &sdk.PutOptions{TTL: h.opts.TagMarkerTTL}
		switch r.Status {
		case sdk.StatusSuccess:
			if cur, ok := decodeStamp(r); ok && cur >= ts {
				return nil
			}
			opts.IfMatchVersion = r.Version
		case sdk.StatusNotFound:
			opts.IfAbsent = true
		default:
			return r.Err()
		}
		w, err := c.Put(ctx, key, encodeStamp(ts), opts)
		if err != nil && !errors.Is(err, sdk.ErrConflict) { // Conflict: retried below
			return err
		}
		if w.OK() {
			return nil
		}
		if w.Status != sdk.StatusConflict {
			return w.Err()
		}
	}
	return fmt.Errorf("marker %s: %w after %d attempts", key, sdk.ErrConflict, attempts)
}

// refreshMarker reads from L2 the tag marker the store reported changed
// (WatchBackplane) and learns it. Markers are hashed, so the tag is known
// only if this instance met it; otherwise the time is kept by marker key,
// mirrored in L1, and every materialized value re-checks its tags. If L2
// cannot be read, every L1 copy is dropped: the invalidation cannot be
// applied and must not be lost.
func (h *Cache) refreshMarker(ctx context.Context, marker string) {
	r, err := h.l2.Get(ctx, marker)
	if err != nil || (!r.OK() && r.Status != sdk.StatusNotFound) {
		if ctx.Err() != nil {
			return // closing
		}
		if err == nil {
			err = r.Err()
		}
		h.stats.l2Errors.Add(1)
		h.log.Warn("hybrid: a changed tag marker could not be read from L2; clearing L1", "marker", marker, "err", err)
		h.clearLocal()
		return
	}
	ts, ok := decodeStamp(r)
	if !ok {
		return // gone (expired, deleted): it invalidates nothing more
	}
	h.tagsMu.Lock()
	if ts <= h.markerTS[marker] {
		h.tagsMu.Unlock()
		return
	}
	h.markerTS[marker] = ts
	tag, known := h.markerTag[marker]
	h.tagsMu.Unlock()
	if known {
		h.learnTag(ctx, tag, ts)
		return
	}
	h.tagEpoch.Add(1) // materialized values re-read their tags' markers
	if err := h.raiseMarker(ctx, h.l1, marker, ts); err != nil {
		h.stats.l1Errors.Add(1)
		h.log.Debug("hybrid: L1 tag marker", "marker", marker, "err", err)
	}
}
