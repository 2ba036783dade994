package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// runClientSuite is the behaviour every backend must show. It is written once
// and run against each topology (embedded here, a real server in the remote
// tests), so the two cannot drift apart.
func runClientSuite(t *testing.T, connect func(t *testing.T) *sdk.Client) {
	ctx := context.Background()
	t.Run("PutGetDelete", func(t *testing.T) {
		c := connect(t)
		r, err := c.Get(ctx, "missing")
		if err != nil || r.Status != sdk.StatusNotFound || r.OK() || !errors.Is(r.Err(), sdk.ErrNotFound) {
			t.Fatalf("miss: %+v %v", r, err)
		}
		r, err = c.Put(ctx, "k", []byte("v1"), nil)
		if err != nil || !r.OK() || r.Version != 1 || r.Revision == 0 {
			t.Fatalf("put: %+v %v", r, err)
		}
		rev1 := r.Revision
		r, _ = c.Put(ctx, "k", []byte("v2"), nil)
		if r.Version != 2 || r.Revision <= rev1 {
			t.Fatalf("overwrite: %+v", r)
		}
		r, _ = c.Get(ctx, "k")
		if !r.OK() || string(r.Value) != "v2" || r.Version != 2 || r.Err() != nil {
			t.Fatalf("get: %+v", r)
		}
		r, _ = c.Delete(ctx, "k")
		if !r.OK() {
			t.Fatalf("delete: %+v", r)
		}
		if r, _ = c.Get(ctx, "k"); r.Status != sdk.StatusNotFound {
			t.Fatalf("after delete: %+v", r)
		}
		if r, _ = c.Delete(ctx, "k"); r.Status != sdk.StatusNotFound {
			t.Fatalf("second delete: %+v", r)
		}
	})
	t.Run("ValuesAreCopied", func(t *testing.T) {
		c := connect(t)
		buf := []byte("original")
		c.Put(ctx, "copy", buf, nil)
		copy(buf, "XXXXXXXX")
		r, _ := c.Get(ctx, "copy")
		if string(r.Value) != "original" {
			t.Fatalf("store aliased the caller's buffer: %q", r.Value)
		}
		r.Value[0] = 'Z'
		if r2, _ := c.Get(ctx, "copy"); string(r2.Value) != "original" {
			t.Fatalf("caller modified the stored value: %q", r2.Value)
		}
	})
	t.Run("EmptyValue", func(t *testing.T) {
		c := connect(t)
		if r, _ := c.Put(ctx, "empty", nil, nil); !r.OK() {
			t.Fatalf("put empty: %+v", r)
		}
		r, _ := c.Get(ctx, "empty")
		if !r.OK() || len(r.Value) != 0 {
			t.Fatalf("get empty: %+v", r)
		}
	})
	t.Run("CAS", func(t *testing.T) {
		c := connect(t)
		if r, _ := c.Put(ctx, "cas", []byte("a"), &sdk.PutOptions{IfAbsent: true}); !r.OK() {
			t.Fatalf("create: %+v", r)
		}
		r, _ := c.Put(ctx, "cas", []byte("b"), &sdk.PutOptions{IfAbsent: true})
		if r.Status != sdk.StatusConflict || !errors.Is(r.Err(), sdk.ErrConflict) {
			t.Fatalf("create twice: %+v", r)
		}
		if r, _ := c.Put(ctx, "cas", []byte("b"), &sdk.PutOptions{IfMatchVersion: 7}); r.Status != sdk.StatusConflict {
			t.Fatalf("stale version: %+v", r)
		}
		if r, _ := c.Put(ctx, "cas", []byte("b"), &sdk.PutOptions{IfMatchVersion: 1}); !r.OK() || r.Version != 2 {
			t.Fatalf("matching version: %+v", r)
		}
		if r, _ := c.Get(ctx, "cas"); string(r.Value) != "b" {
			t.Fatalf("value %q", r.Value)
		}
	})
	t.Run("TTL", func(t *testing.T) {
		c := connect(t)
		r, _ := c.Put(ctx, "ttl", []byte("v"), &sdk.PutOptions{TTL: time.Hour})
		if !r.OK() || r.TTL <= 59*time.Minute || r.TTL > time.Hour {
			t.Fatalf("put with ttl: %+v", r)
		}
		if r, _ := c.TimeToLive(ctx, "ttl"); r.TTL <= 59*time.Minute {
			t.Fatalf("ttl: %+v", r)
		}
		if r, _ := c.Persist(ctx, "ttl"); !r.OK() {
			t.Fatalf("persist: %+v", r)
		}
		if r, _ := c.TimeToLive(ctx, "ttl"); !r.OK() || r.TTL != 0 {
			t.Fatalf("ttl after persist: %+v", r)
		}
		if r, _ := c.Expire(ctx, "ttl", 50*time.Millisecond); !r.OK() {
			t.Fatalf("expire: %+v", r)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			r, _ := c.Get(ctx, "ttl")
			if r.Status == sdk.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("key did not expire: %+v", r)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if r, _ := c.Expire(ctx, "nope", time.Second); r.Status != sdk.StatusNotFound {
			t.Fatalf("expire missing: %+v", r)
		}
		if r, _ := c.TimeToLive(ctx, "nope"); r.Status != sdk.StatusNotFound {
			t.Fatalf("ttl missing: %+v", r)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		c := connect(t)
		// A refused write answers its status AND a non-nil error that
		// errors.Is the status's sentinel and says why (issue #18).
		cases := []struct {
			name   string
			do     func() (sdk.Result, error)
			want   sdk.Status
			sent   error
			reason string // in the error's text
		}{
			{"empty key", func() (sdk.Result, error) { return c.Put(ctx, "", []byte("v"), nil) }, sdk.StatusBadRequest, sdk.ErrBadRequest, "empty key"},
			{"oversized key", func() (sdk.Result, error) { return c.Put(ctx, strings.Repeat("k", 16<<10+1), []byte("v"), nil) }, sdk.StatusBadRequest, sdk.ErrBadRequest,
				"key of 16385 bytes exceeds the maximum key size of 16384 bytes"},
			{"value over the item cap", func() (sdk.Result, error) { return c.Put(ctx, "big", make([]byte, 4<<20+1), nil) }, sdk.StatusItemTooLarge, sdk.ErrItemTooLarge,
				"value of 4194305 bytes exceeds --max-item-bytes 4194304"},
			{"negative TTL", func() (sdk.Result, error) { return c.Put(ctx, "neg", []byte("v"), &sdk.PutOptions{TTL: -time.Second}) }, sdk.StatusBadRequest, sdk.ErrBadRequest, "negative TTL -1s"},
			{"keepttl with a TTL", func() (sdk.Result, error) {
				return c.Put(ctx, "neg", []byte("v"), &sdk.PutOptions{TTL: time.Second, KeepTTL: true})
			}, sdk.StatusBadRequest, sdk.ErrBadRequest, "KeepTTL and a TTL exclude each other"},
			{"expire with zero TTL", func() (sdk.Result, error) { return c.Expire(ctx, "neg", 0) }, sdk.StatusBadRequest, sdk.ErrBadRequest, "bad request"},
		}
		for _, tc := range cases {
			r, err := tc.do()
			if r.Status != tc.want || !errors.Is(err, tc.sent) || err.Error() != r.Err().Error() || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%s: %v %v, want %v and an error saying %q", tc.name, r.Status, err, tc.want, tc.reason)
			}
		}
		for _, k := range []string{"big", "neg"} {
			if r, _ := c.Get(ctx, k); r.Status != sdk.StatusNotFound {
				t.Errorf("rejected write left state under %q: %+v", k, r)
			}
		}
		if r, _ := c.Put(ctx, "max", make([]byte, 4<<20), nil); !r.OK() {
			t.Errorf("a value of exactly the item cap: %v", r.Status)
		}
	})
	t.Run("Bulk", func(t *testing.T) {
		c := connect(t)
		var kvs []sdk.KV
		for i := range 70 {
			kvs = append(kvs, sdk.KV{Key: fmt.Sprintf("bulk:%d", i), Value: []byte(fmt.Sprint(i))})
		}
		res, err := c.PutMany(ctx, kvs)
		if err != nil || len(res) != 70 {
			t.Fatalf("PutMany: %d %v", len(res), err)
		}
		for i, r := range res {
			if !r.OK() || r.Index != i || r.Key != kvs[i].Key || r.Op != sdk.BatchPut {
				t.Fatalf("PutMany[%d] = %+v", i, r)
			}
		}
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = fmt.Sprintf("bulk:%d", i) // 70 present, 30 absent
		}
		res, err = c.GetMany(ctx, keys)
		if err != nil || len(res) != 100 {
			t.Fatalf("GetMany: %d %v", len(res), err)
		}
		ok, missing := 0, 0
		for i, r := range res {
			if r.Index != i || r.Key != keys[i] {
				t.Fatalf("GetMany[%d] out of order: %+v", i, r)
			}
			switch r.Status {
			case sdk.StatusSuccess:
				ok++
				if string(r.Value) != fmt.Sprint(i) {
					t.Fatalf("GetMany[%d] = %q", i, r.Value)
				}
			case sdk.StatusNotFound:
				missing++
			}
		}
		if ok != 70 || missing != 30 {
			t.Fatalf("GetMany: %d success, %d not found; want 70/30", ok, missing)
		}
		res, _ = c.DeleteMany(ctx, []string{"bulk:0", "bulk:99", "bulk:1"})
		if !res[0].OK() || res[1].Status != sdk.StatusNotFound || !res[2].OK() {
			t.Fatalf("DeleteMany: %+v", res)
		}
		mixed := []sdk.BatchItem{
			{Op: sdk.BatchPut, Key: "m1", Value: []byte("x"), Options: &sdk.PutOptions{IfAbsent: true}},
			{Op: sdk.BatchGet, Key: "m1"},
			{Op: sdk.BatchPut, Key: "m1", Value: []byte("y"), Options: &sdk.PutOptions{IfAbsent: true}},
			{Op: sdk.BatchPut, Key: "", Value: []byte("y")},
			{Op: sdk.BatchDelete, Key: "bulk:5"},
			{Op: sdk.BatchOp(9), Key: "m1"},
		}
		res, err = c.ExecuteBatch(ctx, mixed)
		if err != nil {
			t.Fatal(err)
		}
		want := []sdk.Status{sdk.StatusSuccess, sdk.StatusSuccess, sdk.StatusConflict, sdk.StatusBadRequest, sdk.StatusSuccess, sdk.StatusBadRequest}
		for i, r := range res {
			if r.Status != want[i] {
				t.Errorf("mixed[%d] %v, want %v", i, r.Status, want[i])
			}
		}
		if string(res[1].Value) != "x" {
			t.Errorf("mixed get %q", res[1].Value)
		}
		if res, err := c.GetMany(ctx, nil); err != nil || len(res) != 0 {
			t.Fatalf("empty GetMany: %v %v", res, err)
		}
	})
	t.Run("TypedHelpers", func(t *testing.T) {
		c := connect(t)
		type user struct {
			Name string
			Age  int
		}
		if r, err := sdk.PutAs(ctx, c, "user:1", user{"Ada", 36}, nil); err != nil || !r.OK() {
			t.Fatalf("PutAs: %+v %v", r, err)
		}
		u, r, err := sdk.GetAs[user](ctx, c, "user:1")
		if err != nil || !r.OK() || u != (user{"Ada", 36}) {
			t.Fatalf("GetAs: %+v %+v %v", u, r, err)
		}
		u, r, err = sdk.GetAs[user](ctx, c, "user:2")
		if err != nil || r.Status != sdk.StatusNotFound || u != (user{}) {
			t.Fatalf("GetAs miss: %+v %+v %v", u, r, err)
		}
		c.Put(ctx, "notmsgpack", []byte{0xc1}, nil) // 0xc1 is never valid msgpack
		if _, _, err := sdk.GetAs[user](ctx, c, "notmsgpack"); err == nil {
			t.Fatal("decoding garbage returned no error")
		}
	})
	t.Run("ContextAndClose", func(t *testing.T) {
		c := connect(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.Get(cctx, "k"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled context: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		if _, err := c.Get(ctx, "k"); !errors.Is(err, sdk.ErrClosed) {
			t.Fatalf("after close: %v", err)
		}
	})
	t.Run("ConcurrentUse", func(t *testing.T) {
		c := connect(t)
		errs := make(chan error, 8)
		for w := range 8 {
			go func() {
				for i := range 200 {
					k := fmt.Sprintf("conc:%d:%d", w, i%20)
					v := []byte(fmt.Sprint(i))
					if r, err := c.Put(ctx, k, v, nil); err != nil || !r.OK() {
						errs <- fmt.Errorf("put %v %v", r.Status, err)
						return
					}
					if r, err := c.Get(ctx, k); err != nil || !bytes.Equal(r.Value, v) {
						errs <- fmt.Errorf("get %q %v", r.Value, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}

var storeSeq int

func TestEmbeddedSuite(t *testing.T) {
	runClientSuite(t, func(t *testing.T) *sdk.Client {
		storeSeq++
		c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/suite-%d", storeSeq))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}
