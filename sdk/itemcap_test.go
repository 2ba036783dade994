package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// Issue 16: --max-item-bytes bounds a whole key, collections included, on
// both backends: the remote one over the native protocol to a real server,
// and the embedded one. A refused command changes nothing.
func TestItemCapBoundsEveryDataType(t *testing.T) {
	for _, remote := range []bool{true, false} {
		name := "Embedded"
		if remote {
			name = "Remote"
		}
		t.Run(name, func(t *testing.T) {
			cfg := store.DefaultConfig()
			cfg.MaxItemBytes = 1024
			c := testenv.Client(t, remote, "itemcap", &cfg)
			itemCapSuite(t, c)
		})
	}
}

func itemCapSuite(t *testing.T, c *sdk.Client) {
	ctx := context.Background()
	kb2 := bytes.Repeat([]byte("v"), 2048)
	b900 := bytes.Repeat([]byte("v"), 900)
	const text = "value exceeds the maximum item size of 1024 bytes"
	tooLarge := func(what string, err error) {
		t.Helper()
		var ce *sdk.CommandError
		if !errors.Is(err, sdk.ErrItemTooLarge) || !errors.As(err, &ce) || ce.Message != text {
			t.Fatalf("%s: err = %v, want ItemTooLarge %q", what, err, text)
		}
	}

	// Strings: the reference behaviour.
	statusTooLarge := func(what string, st sdk.Status, err error) {
		t.Helper()
		if st != sdk.StatusItemTooLarge && !errors.Is(err, sdk.ErrItemTooLarge) {
			t.Fatalf("%s: %v %v, want ItemTooLarge", what, st, err)
		}
	}
	r, err := c.Put(ctx, "s", kb2, nil)
	statusTooLarge("Put of 2 KiB", r.Status, err)
	if _, err := c.Put(ctx, "s", b900, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Do(ctx, sdk.Cmd{Op: sdk.CmdAppend, Key: "s", Args: [][]byte{bytes.Repeat([]byte("v"), 200)}})
	statusTooLarge("APPEND past the cap", rep.Status, err)
	if g, err := c.Get(ctx, "s"); err != nil || !bytes.Equal(g.Value, b900) {
		t.Fatalf("a refused APPEND changed the value: %d bytes, %v", len(g.Value), err)
	}

	h := c.Hashes()
	_, err = h.SetField(ctx, "h", "f", kb2)
	tooLarge("HSET of 2 KiB", err)
	_, err = h.Set(ctx, "h", map[string][]byte{"a": b900, "b": b900})
	tooLarge("HSET of pairs over the cap together", err)
	if _, err := h.SetField(ctx, "h", "a", b900); err != nil {
		t.Fatal(err)
	}
	// Item size: field and value plus a 2-byte header each, 1 + 900 + 4 =
	// 905; a new field of 115 bytes with a 1-byte value (+ 4) passes the
	// 119 bytes left by one.
	_, err = h.SetNX(ctx, "h", "b", bytes.Repeat([]byte("v"), 115))
	tooLarge("HSETNX", err)
	_, err = h.IncrBy(ctx, "h", strings.Repeat("c", 115), 1)
	tooLarge("HINCRBY", err)
	_, err = h.IncrByFloat(ctx, "h", strings.Repeat("c", 115), 1)
	tooLarge("HINCRBYFLOAT", err)
	if n, _ := h.Len(ctx, "h"); n != 1 {
		t.Fatalf("HLEN %d after refusals, want 1", n)
	}
	if _, err := h.SetField(ctx, "h", "b", bytes.Repeat([]byte("v"), 114)); err != nil {
		t.Fatalf("a field taking the hash to exactly the cap: %v", err)
	}

	l := c.Lists()
	_, err = l.RPush(ctx, "l", kb2)
	tooLarge("RPUSH of 2 KiB", err)
	if _, err := l.RPush(ctx, "l", b900); err != nil {
		t.Fatal(err)
	}
	for range 49 {
		_, err = l.RPush(ctx, "l", b900)
		tooLarge("RPUSH of 900 B more", err)
	}
	_, err = l.LPush(ctx, "l", b900)
	tooLarge("LPUSH", err)
	tooLarge("LSET", l.Set(ctx, "l", 0, kb2))
	if n, _ := l.Len(ctx, "l"); n != 1 {
		t.Fatalf("LLEN %d after 50 RPUSH of 900 B under a 1 KiB cap, want 1", n)
	}

	s := c.Sets()
	_, err = s.Add(ctx, "st", string(kb2))
	tooLarge("SADD of 2 KiB", err)
	if _, err := s.Add(ctx, "st", string(b900)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Add(ctx, "st", strings.Repeat("w", 900))
	tooLarge("SADD more", err)

	z := c.SortedSets()
	_, err = z.Add(ctx, "z", sdk.Member{Member: string(kb2), Score: 1})
	tooLarge("ZADD of 2 KiB", err)
	if _, err := z.Add(ctx, "z", sdk.Member{Member: string(b900), Score: 1}); err != nil {
		t.Fatal(err)
	}
	// 900 + 2 + 8 (score) + 2 = 912 item bytes; a member of 101 (+ 12)
	// passes the cap by one.
	_, err = z.IncrBy(ctx, "z", strings.Repeat("m", 101), 1)
	tooLarge("ZINCRBY of a new member", err)
	if n, _ := z.Card(ctx, "z"); n != 1 {
		t.Fatalf("ZCARD %d, want 1", n)
	}

	x := c.Streams()
	_, err = x.Add(ctx, "x", []sdk.Field{{Name: "f", Value: kb2}}, nil)
	tooLarge("XADD of 2 KiB", err)
	if _, err := x.Add(ctx, "x", []sdk.Field{{Name: "f", Value: bytes.Repeat([]byte("v"), 800)}}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = x.Add(ctx, "x", []sdk.Field{{Name: "f", Value: bytes.Repeat([]byte("v"), 800)}}, nil)
	tooLarge("XADD more", err)
	if n, _ := x.Len(ctx, "x"); n != 1 {
		t.Fatalf("XLEN %d, want 1", n)
	}
}
