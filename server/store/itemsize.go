package store

// Item size: what a key holds as it is serialised (R-MEM-3, the quantity
// --max-item-bytes bounds). A string is its value bytes. A collection is
// the bytes of its members, fields, values and entries plus the framing
// its canonical encoding (encode, msgpack — the form a snapshot, a
// migration and a replication frame carry) spends on each, measured on
// that encoding (TestItemSizeTracksTheEncoding):
//
//   - a byte string (element, field, value, member, consumer name) costs its
//     bytes plus a 2-byte header. msgpack spends 2 up to 255 bytes, 1 on a
//     string up to 31 bytes (a set or sorted-set member, a name), 3 up to
//     64 KiB and 5 beyond: so the figure is at most 1 byte over per string,
//     and under by at most 0.4 % of any string long enough to need a
//     longer header.
//   - a list element: the element and its header.
//   - a hash field: the field and the value, each with its header.
//   - a set member: the member and its header.
//   - a sorted-set member: the member and its header, the 8-byte score and
//     2 bytes of framing (the pair's array header, the score's type byte).
//   - a stream entry: its fields and values, each with its header, the
//     16-byte id and 5 bytes of framing (array headers, the id's number
//     type bytes).
//   - consumer-group bookkeeping is part of the record and counts too, so a
//     record that fits the cap fits whatever its groups hold: a group costs
//     its name and header, its 16-byte last-delivered id, its 8-byte read
//     counter and 7 bytes of framing; a consumer its name and header; a
//     pending entry its 16-byte id, its consumer's name and header, its
//     delivery time and count (8 bytes each) and 6 bytes of framing.
//
// The record's envelope — the collection's outer array headers, a stream's
// last id and counters — is not counted: at most 5 bytes for a list, hash,
// set or sorted set, and under 90 bytes for a stream (plus 2 to 4 for a
// group's list of consumers or pending entries longer than 15).
//
// The accounted bytes (size(), the memory budget's charge: elements plus
// their in-memory bookkeeping, listElemOverhead…) are a second, separate
// dimension: they bound a collection against MaxCollectionBytes, what
// snapshot, migration and replication frames are sized for (keyFits).

// itemStringFraming is the header a byte string costs in the encoding.
const itemStringFraming = 2

// Fixed item bytes of a sorted-set member, a stream entry, a consumer
// group and a pending entry beyond their byte strings (see above).
const (
	itemZSetMemberFixed    = 8 + 2
	itemStreamEntryFixed   = 16 + 5
	itemStreamGroupFixed   = 16 + 8 + 7
	itemStreamPendingFixed = 16 + 8 + 8 + 6
)

// keySize is a key's size, or a command's growth of it, in the three
// dimensions the per-key caps bound (keyFits).
type keySize struct {
	elems int   // elements (a stream: its live entries)
	item  int64 // item bytes: as serialised (--max-item-bytes)
	acct  int64 // accounted bytes: in memory (MaxCollectionBytes)
}

func (k keySize) plus(o keySize) keySize {
	return keySize{k.elems + o.elems, k.item + o.item, k.acct + o.acct}
}

func (k keySize) minus(o keySize) keySize {
	return keySize{k.elems - o.elems, k.item - o.item, k.acct - o.acct}
}

// itemBytes is the item size of one byte string with its header.
func itemBytes(n int) int64 { return int64(n) + itemStringFraming }

// listElemSize is one list element.
func listElemSize(v []byte) keySize {
	return keySize{1, itemBytes(len(v)), int64(len(v)) + listElemOverhead}
}

// listPushGrowth is what pushing elems adds to a list.
func listPushGrowth(elems [][]byte) keySize {
	var grow keySize
	for _, v := range elems {
		grow = grow.plus(listElemSize(v))
	}
	return grow
}

// hashFieldSize is one hash field holding a value of valueLen bytes.
func hashFieldSize(fieldLen, valueLen int) keySize {
	return keySize{1, itemBytes(fieldLen) + itemBytes(valueLen), int64(fieldLen+valueLen) + hashFieldOverhead}
}

// setMemberSize is one set member.
func setMemberSize(memberLen int) keySize {
	return keySize{1, itemBytes(memberLen), int64(memberLen) + setMemberOverhead}
}

// zsetMemberSize is one sorted-set member with its score.
func zsetMemberSize(memberLen int) keySize {
	return keySize{1, itemBytes(memberLen) + itemZSetMemberFixed, int64(memberLen) + zsetMemberOverhead}
}

// streamEntrySize is one stream entry of these fields and values.
func streamEntrySize(fields [][]byte) keySize {
	k := keySize{1, itemStreamEntryFixed, streamEntryOverhead}
	for _, f := range fields {
		k.item += itemBytes(len(f))
		k.acct += int64(len(f)) + streamFieldOverhead
	}
	return k
}

// streamGroupSize is one consumer group, without its consumers and pending
// entries.
func streamGroupSize(nameLen int) keySize {
	return keySize{0, itemBytes(nameLen) + itemStreamGroupFixed, int64(streamGroupOverhead + nameLen)}
}

// streamConsumerSize is one consumer, without its pending entries.
func streamConsumerSize(nameLen int) keySize {
	return keySize{0, itemBytes(nameLen), int64(streamConsumerOverhead + nameLen)}
}

// streamPendingSize is one pending entry of a consumer whose name has
// nameLen bytes (the encoding names the consumer in each).
func streamPendingSize(consumerLen int) keySize {
	return keySize{0, itemBytes(consumerLen) + itemStreamPendingFixed, streamPendingOverhead}
}
