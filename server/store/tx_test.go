package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

var testLimits = txLimits{maxKeyBytes: 16, maxItemBytes: 8}

func TestValidateTxPrepare(t *testing.T) {
	ok := func(m func(r *TxPrepareRequest)) *TxPrepareRequest {
		r := &TxPrepareRequest{Timeout: time.Second, Reads: []TxRead{{Key: "a", Version: 1}}, Writes: []TxWrite{{Op: TxPut, Key: "b", Value: []byte("v")}}}
		if m != nil {
			m(r)
		}
		return r
	}
	cases := []struct {
		name string // the failure the row prevents
		id   string
		req  *TxPrepareRequest
		want kv.Status
	}{
		{"a well-formed request is accepted", "tx", ok(nil), kv.StatusSuccess},
		{"a key both read and written is one transaction key", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0].Key = "a" }), kv.StatusSuccess},
		{"an empty id would make every coordinator share one entry", "", ok(nil), kv.StatusBadRequest},
		{"an id without bound would grow the table without bound", strings.Repeat("x", MaxTxIDBytes+1), ok(nil), kv.StatusBadRequest},
		{"a zero timeout would reserve keys that lapse at once", "tx", ok(func(r *TxPrepareRequest) { r.Timeout = 0 }), kv.StatusBadRequest},
		{"a huge timeout would let a crashed coordinator wedge keys for hours", "tx", ok(func(r *TxPrepareRequest) { r.Timeout = MaxTxTimeout + 1 }), kv.StatusBadRequest},
		{"an empty transaction reserves nothing and means a client bug", "tx", ok(func(r *TxPrepareRequest) { r.Reads, r.Writes = nil, nil }), kv.StatusBadRequest},
		{"an empty key is not a key", "tx", ok(func(r *TxPrepareRequest) { r.Reads[0].Key = "" }), kv.StatusBadRequest},
		{"an oversized key is refused like on Put", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0].Key = strings.Repeat("k", 17) }), kv.StatusBadRequest},
		{"a key read twice could carry two different versions", "tx", ok(func(r *TxPrepareRequest) { r.Reads = append(r.Reads, TxRead{Key: "a", Version: 2}) }), kv.StatusBadRequest},
		{"a key written twice has no defined final value", "tx", ok(func(r *TxPrepareRequest) { r.Writes = append(r.Writes, TxWrite{Op: TxDelete, Key: "b"}) }), kv.StatusBadRequest},
		{"an unknown op must not be applied as something else", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0].Op = 9 }), kv.StatusBadRequest},
		{"a negative TTL is refused like on Put", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0].TTL = -1 }), kv.StatusBadRequest},
		{"IfAbsent with IfMatchVersion can never hold", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0].IfAbsent, r.Writes[0].IfMatchVersion = true, 3 }), kv.StatusBadRequest},
		{"an oversized value is ItemTooLarge before anything is reserved", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0].Value = make([]byte, 9) }), kv.StatusItemTooLarge},
		{"an oversized delete has no value to check", "tx", ok(func(r *TxPrepareRequest) { r.Writes[0] = TxWrite{Op: TxDelete, Key: "b"} }), kv.StatusSuccess},
		{"too many keys would hold every segment lock for too long", "tx", ok(func(r *TxPrepareRequest) {
			r.Reads = nil
			for i := range MaxTxKeys + 1 {
				r.Reads = append(r.Reads, TxRead{Key: strconv.Itoa(i)})
			}
		}), kv.StatusBadRequest},
		{"reads and writes together over the key limit", "tx", ok(func(r *TxPrepareRequest) {
			r.Reads, r.Writes = nil, nil
			for i := range MaxTxKeys {
				r.Reads = append(r.Reads, TxRead{Key: "r" + strconv.Itoa(i)})
			}
			r.Writes = []TxWrite{{Op: TxDelete, Key: "w"}}
		}), kv.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, why := validateTxPrepare(c.id, c.req, testLimits); got != c.want {
				t.Fatalf("status %v (%s), want %v", got, why, c.want)
			}
		})
	}
}

func TestPrepareDecision(t *testing.T) {
	cases := []struct {
		name string // the failure the row prevents
		req  TxPrepareRequest
		cur  map[string]txKeyView
		want kv.Status
		why  string // a fragment of the reason
	}{
		{"reads still at their versions vote yes",
			TxPrepareRequest{Reads: []TxRead{{Key: "a", Version: 3, Revision: 7}, {Key: "b"}}},
			map[string]txKeyView{"a": {Version: 3, Revision: 7}}, kv.StatusSuccess, ""},
		{"lost update: a read that moved must not commit a write derived from it",
			TxPrepareRequest{Reads: []TxRead{{Key: "a", Version: 3}}, Writes: []TxWrite{{Op: TxPut, Key: "a"}}},
			map[string]txKeyView{"a": {Version: 4}}, kv.StatusConflict, "read version 3, now 4"},
		{"a key read as absent that appeared since",
			TxPrepareRequest{Reads: []TxRead{{Key: "a"}}},
			map[string]txKeyView{"a": {Version: 1, Revision: 9}}, kv.StatusConflict, "read absent"},
		{"a key read present that was deleted since",
			TxPrepareRequest{Reads: []TxRead{{Key: "a", Version: 2}}},
			map[string]txKeyView{}, kv.StatusConflict, "now absent"},
		{"ABA: a delete and re-create restarted the version at the same number",
			TxPrepareRequest{Reads: []TxRead{{Key: "a", Version: 1, Revision: 5}}},
			map[string]txKeyView{"a": {Version: 1, Revision: 8}}, kv.StatusConflict, "revision"},
		{"a read without a revision compares the version only",
			TxPrepareRequest{Reads: []TxRead{{Key: "a", Version: 1}}},
			map[string]txKeyView{"a": {Version: 1, Revision: 8}}, kv.StatusSuccess, ""},
		{"two transactions must not both reserve a written key",
			TxPrepareRequest{Writes: []TxWrite{{Op: TxPut, Key: "a"}}},
			map[string]txKeyView{"a": {Reserved: true}}, kv.StatusConflict, "reserved"},
		{"a read key reserved by another transaction may move at its commit",
			TxPrepareRequest{Reads: []TxRead{{Key: "a", Version: 1}}},
			map[string]txKeyView{"a": {Version: 1, Reserved: true}}, kv.StatusConflict, "reserved"},
		{"IfAbsent on an existing key",
			TxPrepareRequest{Writes: []TxWrite{{Op: TxPut, Key: "a", IfAbsent: true}}},
			map[string]txKeyView{"a": {Version: 2}}, kv.StatusConflict, "exists"},
		{"IfAbsent on an absent key",
			TxPrepareRequest{Writes: []TxWrite{{Op: TxPut, Key: "a", IfAbsent: true}}},
			map[string]txKeyView{}, kv.StatusSuccess, ""},
		{"IfMatchVersion on a key that moved",
			TxPrepareRequest{Writes: []TxWrite{{Op: TxDelete, Key: "a", IfMatchVersion: 2}}},
			map[string]txKeyView{"a": {Version: 3}}, kv.StatusConflict, "want 2"},
		{"IfMatchVersion on an absent key",
			TxPrepareRequest{Writes: []TxWrite{{Op: TxPut, Key: "a", IfMatchVersion: 2}}},
			map[string]txKeyView{}, kv.StatusConflict, "want 2"},
		{"blind writes to free keys vote yes whatever their versions",
			TxPrepareRequest{Writes: []TxWrite{{Op: TxPut, Key: "a"}, {Op: TxDelete, Key: "b"}}},
			map[string]txKeyView{"a": {Version: 5}}, kv.StatusSuccess, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, why := prepareDecision(&c.req, c.cur)
			if st != c.want || !strings.Contains(why, c.why) {
				t.Fatalf("decision %v %q, want %v containing %q", st, why, c.want, c.why)
			}
		})
	}
}

// keysInDistinctSegments returns n keys with the given prefix, each in its
// own segment, so that a transaction over them takes several segment locks.
func keysInDistinctSegments(s *Store, prefix string, n int) []string {
	seen := map[uint16]bool{}
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if id := s.SegmentFor(k).ID(); !seen[id] {
			seen[id] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func mustReply(t *testing.T, r kv.Reply, want kv.Status) kv.Reply {
	t.Helper()
	if r.Status != want {
		t.Fatalf("reply %v %q, want %v", r.Status, r.Message, want)
	}
	return r
}

func reservedKeys(s *Store) int {
	n := 0
	for _, g := range s.segments {
		g.mu.RLock()
		n += len(g.txLocks)
		g.mu.RUnlock()
	}
	return n
}

func TestTxCommitAppliesEveryWriteThroughTheOpLog(t *testing.T) {
	s, _ := newTestStore(t)
	k := keysInDistinctSegments(s, "k", 4)
	r0 := mustStatus(t, s.Put(k[0], []byte("old"), nil), kv.StatusSuccess)
	mustStatus(t, s.Put(k[3], []byte("gone soon"), nil), kv.StatusSuccess)
	revs := map[string]uint64{}
	for _, key := range k {
		revs[key] = s.SegmentFor(key).Revision()
	}
	req := TxPrepareRequest{
		Timeout: time.Second,
		Reads:   []TxRead{{Key: k[0], Version: r0.Version, Revision: r0.Revision}, {Key: k[1]}},
		Writes: []TxWrite{
			{Op: TxPut, Key: k[0], Value: []byte("new"), ContentType: "text/plain"},
			{Op: TxPut, Key: k[1], Value: []byte("created"), TTL: time.Minute},
			{Op: TxDelete, Key: k[2]}, // absent: a no-op
			{Op: TxDelete, Key: k[3]},
		},
	}
	mustReply(t, s.TxPrepare("tx1", req), kv.StatusSuccess)
	if n := reservedKeys(s); n != 4 {
		t.Fatalf("%d keys reserved, want 4", n)
	}
	r := mustReply(t, s.TxCommit("tx1"), kv.StatusSuccess)
	if r.Type != kv.ReplyArray || len(r.Array) != 4 {
		t.Fatalf("commit reply %+v", r)
	}
	if a := r.Array[0]; a.Status != kv.StatusSuccess || a.Version != 2 || a.Revision <= revs[k[0]] {
		t.Fatalf("put over a key: %+v", a)
	}
	if a := r.Array[1]; a.Status != kv.StatusSuccess || a.Version != 1 {
		t.Fatalf("put of a new key: %+v", a)
	}
	if a := r.Array[2]; a.Status != kv.StatusNotFound {
		t.Fatalf("delete of an absent key: %+v", a)
	}
	if a := r.Array[3]; a.Status != kv.StatusSuccess || a.Revision <= revs[k[3]] {
		t.Fatalf("delete: %+v", a)
	}
	if g := s.Get(k[0]); string(g.Value) != "new" || g.Version != 2 {
		t.Fatalf("k0 = %+v", g)
	}
	if g := s.Get(k[1]); string(g.Value) != "created" || g.TTL != time.Minute {
		t.Fatalf("k1 = %+v", g)
	}
	mustStatus(t, s.Get(k[3]), kv.StatusNotFound)
	if n := reservedKeys(s); n != 0 {
		t.Fatalf("%d reservations left after commit", n)
	}
	// The writes are ordinary op-log entries with their revisions: replicas
	// and watchers see them like any write. Around them, the prepare and
	// commit markers that carry the prepared state to the replicas.
	for i, want := range map[int]OpKind{0: OpPut, 1: OpPut, 3: OpDelete} {
		ops, err := s.SegmentFor(k[i]).OperationsAfter(revs[k[i]])
		if err != nil || len(ops) != 3 || ops[0].Kind != OpTxPrepare || ops[2].Kind != OpTxCommit ||
			ops[1].Kind != want || ops[1].Record.Key() != k[i] || ops[1].Revision() != r.Array[i].Revision {
			t.Fatalf("op-log of %s: %+v %v", k[i], ops, err)
		}
		if !ops[0].Kind.TxMarker() || !ops[2].Kind.TxMarker() || ops[1].Kind.TxMarker() {
			t.Fatalf("TxMarker: %v %v %v", ops[0].Kind, ops[1].Kind, ops[2].Kind)
		}
	}
	if ops, _ := s.SegmentFor(k[2]).OperationsAfter(revs[k[2]]); len(ops) != 2 || ops[0].Kind != OpTxPrepare || ops[1].Kind != OpTxCommit {
		t.Fatalf("a delete of an absent key was logged: %+v", ops)
	}
	if st := s.TxStats(); st.Live != 0 || st.StagedBytes != 0 || st.Remembered != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTxConflictChangesAndReservesNothing(t *testing.T) {
	s, _ := newTestStore(t)
	k := keysInDistinctSegments(s, "c", 3)
	r := mustStatus(t, s.Put(k[0], []byte("1"), nil), kv.StatusSuccess)
	mustStatus(t, s.Put(k[0], []byte("2"), nil), kv.StatusSuccess) // moves the read
	req := TxPrepareRequest{Timeout: time.Second,
		Reads:  []TxRead{{Key: k[0], Version: r.Version, Revision: r.Revision}},
		Writes: []TxWrite{{Op: TxPut, Key: k[1], Value: []byte("x")}, {Op: TxPut, Key: k[2], Value: []byte("y")}}}
	rep := mustReply(t, s.TxPrepare("tx", req), kv.StatusConflict)
	if !strings.Contains(rep.Message, k[0]) {
		t.Fatalf("the reason does not name the key: %q", rep.Message)
	}
	if n := reservedKeys(s); n != 0 {
		t.Fatalf("a refused prepare left %d reservations", n)
	}
	for _, key := range k[1:] {
		mustStatus(t, s.Get(key), kv.StatusNotFound)
		mustStatus(t, s.Put(key, []byte("free"), nil), kv.StatusSuccess)
	}
	// The coordinator aborts after a no vote; a commit would find nothing.
	mustReply(t, s.TxCommit("tx"), kv.StatusNotFound)
	mustReply(t, s.TxAbort("tx"), kv.StatusSuccess)
	if st := s.TxStats(); st.Live != 0 || st.StagedBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTxReservationRefusesEveryOtherWriter(t *testing.T) {
	s, _ := newTestStore(t)
	mustStatus(t, s.Put("r", []byte("1"), nil), kv.StatusSuccess)
	mustStatus(t, s.Put("w", []byte("1"), &kv.PutOptions{TTL: time.Hour}), kv.StatusSuccess)
	g := s.Get("r")
	mustReply(t, s.TxPrepare("holder", TxPrepareRequest{Timeout: time.Second,
		Reads:  []TxRead{{Key: "r", Version: g.Version}},
		Writes: []TxWrite{{Op: TxPut, Key: "w", Value: []byte("2")}, {Op: TxPut, Key: "h", Value: []byte("x")}}}), kv.StatusSuccess)

	for _, key := range []string{"r", "w", "h"} {
		mustStatus(t, s.Put(key, []byte("intruder"), nil), kv.StatusConflict)
		if r := s.Exec(kv.NewCmd(kv.CmdHSet, key, "f", "v")); r.Status != kv.StatusConflict {
			t.Fatalf("HSET on reserved %s: %v", key, r.Status)
		}
	}
	mustStatus(t, s.Delete("r"), kv.StatusConflict)
	mustStatus(t, s.Expire("r", time.Minute), kv.StatusConflict)
	mustStatus(t, s.Persist("w"), kv.StatusConflict)
	// Readers are not blocked: they see the state before the commit.
	if r := s.Get("w"); string(r.Value) != "1" {
		t.Fatalf("read during the prepared window: %+v", r)
	}
	// Another transaction over any of the keys votes no.
	for i, req := range []TxPrepareRequest{
		{Timeout: time.Second, Reads: []TxRead{{Key: "w", Version: 1}}},
		{Timeout: time.Second, Writes: []TxWrite{{Op: TxDelete, Key: "r"}}},
	} {
		id := fmt.Sprintf("other%d", i)
		rep := mustReply(t, s.TxPrepare(id, req), kv.StatusConflict)
		if !strings.Contains(rep.Message, "reserved") {
			t.Fatalf("reason %q", rep.Message)
		}
		mustReply(t, s.TxAbort(id), kv.StatusSuccess)
	}
	mustReply(t, s.TxCommit("holder"), kv.StatusSuccess)
	if r := s.Get("w"); string(r.Value) != "2" || r.TTL != 0 {
		t.Fatalf("committed write: %+v", r)
	}
	mustStatus(t, s.Put("r", []byte("mine"), nil), kv.StatusSuccess)
	mustStatus(t, s.Delete("h"), kv.StatusSuccess)
}

func TestTxPhasesAreIdempotent(t *testing.T) {
	s, _ := newTestStore(t)
	req := func() TxPrepareRequest {
		return TxPrepareRequest{Timeout: time.Second, Writes: []TxWrite{{Op: TxPut, Key: "a", Value: []byte("v")}}}
	}
	mustReply(t, s.TxPrepare("t1", req()), kv.StatusSuccess)
	mustReply(t, s.TxPrepare("t1", req()), kv.StatusSuccess) // a retried prepare
	first := mustReply(t, s.TxCommit("t1"), kv.StatusSuccess)
	again := mustReply(t, s.TxCommit("t1"), kv.StatusSuccess) // a retried commit whose reply was lost
	if len(again.Array) != 1 || again.Array[0].Version != first.Array[0].Version || again.Array[0].Revision != first.Array[0].Revision {
		t.Fatalf("retried commit %+v, first %+v", again, first)
	}
	if r := s.Get("a"); r.Version != 1 {
		t.Fatalf("a retried commit applied twice: %+v", r)
	}
	mustReply(t, s.TxPrepare("t1", req()), kv.StatusConflict) // late duplicate: already committed
	if n := reservedKeys(s); n != 0 {
		t.Fatalf("a late prepare reserved %d keys", n)
	}
	if r := mustReply(t, s.TxAbort("t1"), kv.StatusConflict); !strings.Contains(r.Message, "committed") {
		t.Fatalf("abort after commit: %q", r.Message)
	}

	mustReply(t, s.TxPrepare("t2", req()), kv.StatusSuccess)
	mustReply(t, s.TxAbort("t2"), kv.StatusSuccess)
	mustReply(t, s.TxAbort("t2"), kv.StatusSuccess)
	if r := mustReply(t, s.TxCommit("t2"), kv.StatusConflict); !strings.Contains(r.Message, "aborted") {
		t.Fatalf("commit after abort: %q", r.Message)
	}
	if r := s.Get("a"); r.Version != 1 {
		t.Fatalf("an aborted transaction wrote: %+v", r)
	}

	// An abort that overtook its prepare in the network: the prepare must
	// not reserve keys nobody will ever commit.
	mustReply(t, s.TxAbort("t3"), kv.StatusSuccess)
	mustReply(t, s.TxPrepare("t3", req()), kv.StatusConflict)
	if n := reservedKeys(s); n != 0 {
		t.Fatalf("%d keys reserved", n)
	}
	mustReply(t, s.TxCommit("never-prepared"), kv.StatusNotFound)
	mustReply(t, s.TxCommit(""), kv.StatusBadRequest)
	mustReply(t, s.TxAbort(""), kv.StatusBadRequest)
}

// A coordinator that prepared and crashed never wedges a key.
func TestTxReservationsLapseAfterTheTimeout(t *testing.T) {
	s, clk := newTestStore(t)
	k := keysInDistinctSegments(s, "e", 3)
	for _, key := range k {
		mustStatus(t, s.Put(key, []byte("before"), nil), kv.StatusSuccess)
	}
	var writes []TxWrite
	for _, key := range k {
		writes = append(writes, TxWrite{Op: TxPut, Key: key, Value: []byte("after")})
	}
	mustReply(t, s.TxPrepare("crashed", TxPrepareRequest{Timeout: 2 * time.Second, Writes: writes}), kv.StatusSuccess)
	clk.Advance(2*time.Second - 1)
	mustStatus(t, s.Put(k[0], []byte("x"), nil), kv.StatusConflict)
	clk.Advance(1)
	// On access: the lapsed reservation no longer refuses a writer.
	mustStatus(t, s.Put(k[0], []byte("x"), nil), kv.StatusSuccess)
	// A late commit applies nothing, not even to the keys still reserved.
	if r := mustReply(t, s.TxCommit("crashed"), kv.StatusConflict); r.Message != "transaction expired" {
		t.Fatalf("late commit: %q", r.Message)
	}
	if r := s.Get(k[0]); string(r.Value) != "x" {
		t.Fatalf("k0 = %q", r.Value)
	}
	for _, key := range k[1:] {
		if r := s.Get(key); string(r.Value) != "before" {
			t.Fatalf("%s = %q: a lapsed transaction was half applied", key, r.Value)
		}
	}
	// The sweep released the segments' reservations and the staged bytes.
	if n := reservedKeys(s); n != 0 {
		t.Fatalf("%d reservations left after the lapse", n)
	}
	if st := s.TxStats(); st.Live != 0 || st.StagedBytes != 0 || st.Remembered != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The outcome is remembered for the retention, then forgotten.
	clk.Advance(txRetention(2 * time.Second))
	if st := s.TxStats(); st.Remembered != 0 {
		t.Fatalf("outcome not forgotten: %+v", st)
	}
	mustReply(t, s.TxCommit("crashed"), kv.StatusNotFound)
}

func TestTxLapseIsSweptWithoutAnyAccessToTheKeys(t *testing.T) {
	s, clk := newTestStore(t)
	mustReply(t, s.TxPrepare("a", TxPrepareRequest{Timeout: time.Second, Writes: []TxWrite{{Op: TxPut, Key: "ka", Value: []byte("v")}}}), kv.StatusSuccess)
	mustReply(t, s.TxPrepare("b", TxPrepareRequest{Timeout: 3 * time.Second, Reads: []TxRead{{Key: "kb"}}}), kv.StatusSuccess)
	clk.Advance(2 * time.Second)
	// Any transaction call sweeps: "a" lapsed, "b" still holds its key.
	mustReply(t, s.TxPrepare("c", TxPrepareRequest{Timeout: time.Second, Reads: []TxRead{{Key: "kc"}}}), kv.StatusSuccess)
	if n := reservedKeys(s); n != 2 {
		t.Fatalf("%d reservations, want kb and kc", n)
	}
	mustStatus(t, s.Put("kb", nil, nil), kv.StatusConflict)
	if st := s.TxStats(); st.Live != 2 || st.StagedBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The commit checks every reservation before applying anything: if one
// lapsed and was taken over, nothing is applied.
func TestTxCommitNeverHalfApplies(t *testing.T) {
	for _, steal := range []string{"lapsed", "taken by another transaction"} {
		t.Run(steal, func(t *testing.T) {
			s, _ := newTestStore(t)
			k := keysInDistinctSegments(s, "h", 3)
			var writes []TxWrite
			for _, key := range k {
				writes = append(writes, TxWrite{Op: TxPut, Key: key, Value: []byte("tx")})
			}
			mustReply(t, s.TxPrepare("tx", TxPrepareRequest{Timeout: time.Minute, Writes: writes}), kv.StatusSuccess)
			g := s.SegmentFor(k[2])
			g.mu.Lock()
			if steal == "lapsed" {
				delete(g.txLocks, k[2])
			} else {
				g.txLocks[k[2]] = txLock{txID: "thief", expires: g.txLocks[k[2]].expires}
			}
			g.mu.Unlock()
			mustReply(t, s.TxCommit("tx"), kv.StatusConflict)
			for _, key := range k {
				mustStatus(t, s.Get(key), kv.StatusNotFound)
			}
			want := 0
			if steal != "lapsed" {
				want = 1 // the thief keeps its reservation
			}
			if n := reservedKeys(s); n != want {
				t.Fatalf("%d reservations left, want %d", n, want)
			}
		})
	}
}

func TestTxPrepareRefusesWhatTheStoreCannotHold(t *testing.T) {
	t.Run("no-eviction store full", func(t *testing.T) {
		s, _ := newTestStore(t, func(c *Config) {
			c.Eviction = NoEviction
			c.MaxMemoryBytes = 64 << 10
			c.MaxItemBytes = 32 << 10
		})
		for i := range 3 {
			mustStatus(t, s.Put(fmt.Sprintf("fill%d", i), make([]byte, 16<<10), nil), kv.StatusSuccess)
		}
		req := TxPrepareRequest{Timeout: time.Second, Writes: []TxWrite{
			{Op: TxPut, Key: "x", Value: make([]byte, 10<<10)},
			{Op: TxPut, Key: "y", Value: make([]byte, 10<<10)},
		}}
		mustReply(t, s.TxPrepare("big", req), kv.StatusCapacityExceeded)
		if n := reservedKeys(s); n != 0 {
			t.Fatalf("%d reservations", n)
		}
		// Overwriting with a smaller value frees memory: allowed.
		req = TxPrepareRequest{Timeout: time.Second, Writes: []TxWrite{{Op: TxPut, Key: "fill0", Value: []byte("small")}, {Op: TxDelete, Key: "fill1"}}}
		mustReply(t, s.TxPrepare("shrink", req), kv.StatusSuccess)
		mustReply(t, s.TxCommit("shrink"), kv.StatusSuccess)
	})
	t.Run("staged bytes bounded", func(t *testing.T) {
		s, _ := newTestStore(t, func(c *Config) { c.MaxMemoryBytes, c.MaxItemBytes = 1<<20, 256<<10 })
		one := func(key string) TxPrepareRequest {
			return TxPrepareRequest{Timeout: time.Second, Writes: []TxWrite{{Op: TxPut, Key: key, Value: make([]byte, 150<<10)}}}
		}
		mustReply(t, s.TxPrepare("a", one("a")), kv.StatusSuccess)
		mustReply(t, s.TxPrepare("b", one("b")), kv.StatusCapacityExceeded)
		mustReply(t, s.TxCommit("a"), kv.StatusSuccess)
		mustReply(t, s.TxPrepare("b", one("b")), kv.StatusSuccess)
	})
}

func TestTxCommandsOnTheWire(t *testing.T) {
	s, _ := newTestStore(t)
	mustStatus(t, s.Put("acct", []byte("10"), nil), kv.StatusSuccess)
	v := s.Get("acct")
	cmd, err := TxPrepareCmd("wire", &TxPrepareRequest{Timeout: time.Second,
		Reads:  []TxRead{{Key: "acct", Version: v.Version, Revision: v.Revision}},
		Writes: []TxWrite{{Op: TxPut, Key: "acct", Value: []byte("5"), TTL: time.Hour, Labels: map[string]string{"a": "b"}}, {Op: TxPut, Key: "log", Value: []byte("-5")}}})
	if err != nil {
		t.Fatal(err)
	}
	if !cmd.Op.NodeLevel() {
		t.Fatal("TX.PREPARE must be node-level")
	}
	mustReply(t, s.Exec(cmd), kv.StatusSuccess)
	mustReply(t, s.Exec(cmd), kv.StatusSuccess)
	r := mustReply(t, s.Exec(TxCommitCmd("wire")), kv.StatusSuccess)
	if len(r.Array) != 2 {
		t.Fatalf("commit reply %+v", r)
	}
	if g := s.Get("acct"); string(g.Value) != "5" || g.TTL != time.Hour {
		t.Fatalf("acct = %+v", g)
	}
	mustReply(t, s.Exec(TxAbortCmd("other")), kv.StatusSuccess)

	for name, c := range map[string]kv.Cmd{
		"prepare without body": {Op: kv.CmdTxPrepare, Args: [][]byte{[]byte("x")}},
		"prepare with garbage": {Op: kv.CmdTxPrepare, Args: [][]byte{[]byte("x"), {0xc1, 0xff}}},
		"prepare of nothing":   {Op: kv.CmdTxPrepare, Args: [][]byte{[]byte("x"), {0x80}}},
		"commit without id":    {Op: kv.CmdTxCommit},
		"abort with extra":     {Op: kv.CmdTxAbort, Args: [][]byte{[]byte("x"), []byte("y")}},
	} {
		if r := s.Exec(c); r.Status != kv.StatusBadRequest || r.Message == "" {
			t.Errorf("%s: %v %q", name, r.Status, r.Message)
		}
	}
}

// The decoded request shares nothing with the command's buffer, which the
// native server reuses for the next frame.
func TestTxPrepareCopiesOutOfTheCommandBuffer(t *testing.T) {
	s, _ := newTestStore(t)
	cmd, _ := TxPrepareCmd("buf", &TxPrepareRequest{Timeout: time.Second, Writes: []TxWrite{{Op: TxPut, Key: "k", Value: []byte("value")}}})
	mustReply(t, s.Exec(cmd), kv.StatusSuccess)
	for i := range cmd.Args[1] {
		cmd.Args[1][i] = 'X'
	}
	copy(cmd.Args[0], "XXX")
	mustReply(t, s.Exec(TxCommitCmd("buf")), kv.StatusSuccess)
	if g := s.Get("k"); string(g.Value) != "value" {
		t.Fatalf("k = %q", g.Value)
	}
}

// Transfers between accounts in many segments, from many goroutines, each
// retried on conflict: the total is preserved and no balance goes negative
// (and the run does not deadlock on segment locks).
func TestTxConcurrentTransfersPreserveTheTotal(t *testing.T) {
	s, _ := newTestStore(t)
	accounts := keysInDistinctSegments(s, "acct", 6)
	const initial = 100
	for _, a := range accounts {
		mustStatus(t, s.Put(a, []byte(strconv.Itoa(initial)), nil), kv.StatusSuccess)
	}
	const workers, transfers = 8, 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed, conflicts := 0, 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range transfers {
				from, to := rng.IntN(len(accounts)), rng.IntN(len(accounts)-1)
				if to >= from {
					to++
				}
				amount := 1 + rng.IntN(20)
				for attempt := 0; ; attempt++ {
					id := fmt.Sprintf("w%d-%d-%d", w, i, attempt)
					fr, tr := s.Get(accounts[from]), s.Get(accounts[to])
					fb, _ := strconv.Atoi(string(fr.Value))
					tb, _ := strconv.Atoi(string(tr.Value))
					req := TxPrepareRequest{Timeout: time.Second, Reads: []TxRead{
						{Key: accounts[from], Version: fr.Version, Revision: fr.Revision},
						{Key: accounts[to], Version: tr.Version, Revision: tr.Revision}}}
					if fb >= amount {
						req.Writes = []TxWrite{
							{Op: TxPut, Key: accounts[from], Value: []byte(strconv.Itoa(fb - amount))},
							{Op: TxPut, Key: accounts[to], Value: []byte(strconv.Itoa(tb + amount))}}
					}
					if r := s.TxPrepare(id, req); r.Status != kv.StatusSuccess {
						s.TxAbort(id)
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if r := s.TxCommit(id); r.Status != kv.StatusSuccess {
						t.Errorf("commit after a yes vote: %v %q", r.Status, r.Message)
						return
					}
					mu.Lock()
					committed++
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, a := range accounts {
		b, err := strconv.Atoi(string(s.Get(a).Value))
		if err != nil || b < 0 {
			t.Fatalf("%s = %d %v", a, b, err)
		}
		total += b
	}
	if total != initial*len(accounts) || committed != workers*transfers {
		t.Fatalf("total %d, want %d; %d committed", total, initial*len(accounts), committed)
	}
	if n := reservedKeys(s); n != 0 {
		t.Fatalf("%d reservations left", n)
	}
	t.Logf("%d transfers, %d conflicts retried", committed, conflicts)
}

// Randomized check against a plain-map model (STYLE 6): interleaved plain
// writes, prepares, commits, aborts and clock moves. The model decides each
// prepare from its own copy of the data and reservations; the store must
// agree on every status and end with the same data.
func TestTxAgainstModel(t *testing.T) {
	var total txModelCounts
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			c := runTxModel(t, seed)
			total.commits += c.commits
			total.refused += c.refused
			total.lapsed += c.lapsed
			total.blocked += c.blocked
		})
	}
	// The run must have exercised every path, or it proves little.
	if total.commits == 0 || total.refused == 0 || total.lapsed == 0 || total.blocked == 0 {
		t.Fatalf("model run too narrow: %+v", total)
	}
}

type txModelCounts struct{ commits, refused, lapsed, blocked int }

type modelTx struct {
	keys    []string
	writes  []TxWrite
	expires int64
}

func runTxModel(t *testing.T, seed uint64) (c txModelCounts) {
	s, clk := newTestStore(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	keys := []string{"a", "b", "c", "d", "e", "f"}
	type val struct {
		v       string
		version uint64
	}
	data := map[string]val{}
	reserved := map[string]string{} // key → tx id
	prepared := map[string]*modelTx{}
	var finished []string
	now := func() int64 { return clk.NowNano() }
	lapse := func() {
		for id, tx := range prepared {
			if now() >= tx.expires {
				for _, k := range tx.keys {
					if reserved[k] == id {
						delete(reserved, k)
					}
				}
				delete(prepared, id)
				finished = append(finished, id)
				c.lapsed++
			}
		}
	}
	next := 0
	for step := range 400 {
		lapse()
		switch op := rng.IntN(10); {
		case op < 3: // a plain write
			k := keys[rng.IntN(len(keys))]
			v := fmt.Sprintf("p%d", step)
			r := s.Put(k, []byte(v), nil)
			want := kv.StatusSuccess
			if reserved[k] != "" {
				want = kv.StatusConflict
			}
			if r.Status != want {
				t.Fatalf("step %d: put %s: %v, want %v", step, k, r.Status, want)
			}
			if want == kv.StatusSuccess {
				data[k] = val{v, data[k].version + 1}
			} else {
				c.blocked++
			}
		case op < 6: // a prepare with reads that may be stale
			next++
			id := fmt.Sprintf("t%d", next)
			req := TxPrepareRequest{Timeout: time.Duration(1+rng.IntN(3)) * time.Second}
			var tx modelTx
			for _, k := range keys {
				switch rng.IntN(4) {
				case 0:
					ver := data[k].version
					if rng.IntN(4) == 0 && ver > 0 {
						ver-- // stale
					}
					req.Reads = append(req.Reads, TxRead{Key: k, Version: ver})
					tx.keys = append(tx.keys, k)
				case 1:
					w := TxWrite{Op: TxPut, Key: k, Value: fmt.Appendf(nil, "%s@%d", id, step)}
					if rng.IntN(3) == 0 {
						w = TxWrite{Op: TxDelete, Key: k}
					}
					req.Writes = append(req.Writes, w)
					tx.keys = append(tx.keys, k)
				}
			}
			if len(tx.keys) == 0 {
				continue
			}
			want := kv.StatusSuccess
			for _, r := range req.Reads {
				if data[r.Key].version != r.Version {
					want = kv.StatusConflict
				}
			}
			for _, k := range tx.keys {
				if reserved[k] != "" {
					want = kv.StatusConflict
				}
			}
			if r := s.TxPrepare(id, req); r.Status != want {
				t.Fatalf("step %d: prepare %s %+v: %v %q, want %v", step, id, req, r.Status, r.Message, want)
			}
			if want == kv.StatusSuccess {
				tx.writes, tx.expires = req.Writes, now()+int64(req.Timeout)
				for _, k := range tx.keys {
					reserved[k] = id
				}
				prepared[id] = &tx
			} else {
				c.refused++
			}
		case op < 8: // commit a prepared transaction, or a finished one
			id := pickTx(rng, prepared, finished)
			if id == "" {
				continue
			}
			r := s.TxCommit(id)
			tx := prepared[id]
			if tx == nil {
				if r.Status == kv.StatusSuccess {
					// committed before: the same answer again, nothing more applied
					continue
				}
				if r.Status != kv.StatusConflict && r.Status != kv.StatusNotFound { // NotFound: outcome forgotten
					t.Fatalf("step %d: commit of finished %s: %v", step, id, r.Status)
				}
				continue
			}
			if r.Status != kv.StatusSuccess {
				t.Fatalf("step %d: commit %s: %v %q", step, id, r.Status, r.Message)
			}
			for _, w := range tx.writes {
				if w.Op == TxDelete {
					if data[w.Key].version != 0 {
						delete(data, w.Key)
					}
				} else {
					data[w.Key] = val{string(w.Value), data[w.Key].version + 1}
				}
			}
			for _, k := range tx.keys {
				delete(reserved, k)
			}
			delete(prepared, id)
			finished = append(finished, id)
			c.commits++
		case op < 9: // abort
			id := pickTx(rng, prepared, finished)
			if id == "" {
				continue
			}
			r := s.TxAbort(id)
			if tx := prepared[id]; tx != nil {
				if r.Status != kv.StatusSuccess {
					t.Fatalf("step %d: abort %s: %v", step, id, r.Status)
				}
				for _, k := range tx.keys {
					delete(reserved, k)
				}
				delete(prepared, id)
				finished = append(finished, id)
			}
		default:
			clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}
		for _, k := range keys {
			g := s.Get(k)
			m, ok := data[k]
			if ok != (g.Status == kv.StatusSuccess) || (ok && (string(g.Value) != m.v || g.Version != m.version)) {
				t.Fatalf("step %d: %s = %v %q v%d, model %v", step, k, g.Status, g.Value, g.Version, m)
			}
		}
	}
	return c
}

func pickTx(rng *rand.Rand, prepared map[string]*modelTx, finished []string) string {
	ids := make([]string, 0, len(prepared)+len(finished))
	for id := range prepared {
		ids = append(ids, id)
	}
	ids = append(ids, finished...)
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids) // map order must not break the seed's reproducibility
	return ids[rng.IntN(len(ids))]
}

// Phases of one id that race each other (a coordinator retrying over a slow
// link) settle on one outcome: every commit and abort agrees with the data.
func TestTxRacingPhasesOfOneIDAgree(t *testing.T) {
	for round := range 50 {
		s, _ := newTestStore(t)
		k := keysInDistinctSegments(s, "race", 3)
		var writes []TxWrite
		for _, key := range k {
			writes = append(writes, TxWrite{Op: TxPut, Key: key, Value: []byte("v")})
		}
		req := TxPrepareRequest{Timeout: time.Minute, Writes: writes}
		mustReply(t, s.TxPrepare("id", req), kv.StatusSuccess)
		var wg sync.WaitGroup
		commits := make([]kv.Reply, 4)
		aborts := make([]kv.Reply, 4)
		prepares := make([]kv.Reply, 4)
		for i := range 4 {
			wg.Add(3)
			go func() { defer wg.Done(); commits[i] = s.TxCommit("id") }()
			go func() { defer wg.Done(); aborts[i] = s.TxAbort("id") }()
			go func() { defer wg.Done(); prepares[i] = s.TxPrepare("id", req) }()
		}
		wg.Wait()
		applied := s.Get(k[0]).Status == kv.StatusSuccess
		for _, key := range k {
			if (s.Get(key).Status == kv.StatusSuccess) != applied {
				t.Fatalf("round %d: half applied", round)
			}
		}
		for i := range 4 {
			if (commits[i].Status == kv.StatusSuccess) != applied {
				t.Fatalf("round %d: commit said %v %q, applied=%v", round, commits[i].Status, commits[i].Message, applied)
			}
			if (aborts[i].Status == kv.StatusSuccess) == applied {
				t.Fatalf("round %d: abort said %v, applied=%v", round, aborts[i].Status, applied)
			}
			if prepares[i].Status != kv.StatusSuccess && prepares[i].Status != kv.StatusConflict {
				t.Fatalf("round %d: prepare said %v", round, prepares[i].Status)
			}
		}
		if n := reservedKeys(s); n != 0 {
			t.Fatalf("round %d: %d reservations left", round, n)
		}
	}
}
