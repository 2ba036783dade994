package store

import "testing"

// TestRecordExtKeepsMetadataAndCollectionApart: the metadata and the
// materialized collection share one pointer (D73). Setting one keeps the
// other; an exported copy or an op-log header carries the metadata but
// never the live collection; a clone given other metadata leaves the
// published record's alone; and a plain string without metadata pays
// nothing for either.
func TestRecordExtKeepsMetadataAndCollectionApart(t *testing.T) {
	if r := newStringRecord("k", []byte("v"), 0); r.ext() != nil {
		t.Fatal("a plain string record carries an ext")
	}
	meta := &Metadata{ContentType: "text/plain"}
	coll := newCollection(KindList)
	r := recordOf("k", nil, Record{Kind: KindList})
	r.SetMeta(meta)
	r.setColl(coll)
	if r.Meta() != meta || r.coll() != coll {
		t.Fatalf("after SetMeta then setColl: meta %v, collection %v", r.Meta(), r.coll())
	}
	r.setColl(nil)
	r.setColl(coll)
	if r.Meta() != meta {
		t.Fatal("setColl dropped the metadata")
	}
	for name, c := range map[string]Record{"exported": r.exported(), "header": r.headerValue()} {
		if c.Meta() != meta || c.coll() != nil {
			t.Fatalf("%s copy: meta %v, collection %v (want the metadata, no live collection)", name, c.Meta(), c.coll())
		}
	}
	c := r.clone()
	c.SetMeta(nil)
	if r.Meta() != meta || r.coll() != coll || c.coll() != coll || c.Meta() != nil {
		t.Fatalf("a clone's SetMeta(nil) reached the original: original meta %v, clone meta %v", r.Meta(), c.Meta())
	}
	r.SetMeta(nil)
	r.setColl(nil)
	if r.ext() != nil {
		t.Fatal("a record without metadata or collection kept an ext")
	}
}
