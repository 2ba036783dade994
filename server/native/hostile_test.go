package native_test

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

const (
	i64max = "9223372036854775807"
	i64min = "-9223372036854775808"
	idMax  = "18446744073709551615-18446744073709551615"
)

// command sends one data-structure command and decodes its reply; the
// connection must answer it by its id.
func (c *rawClient) command(op kv.CmdOp, key string, args ...string) kv.Reply {
	c.t.Helper()
	cmd := kv.NewCmd(op, key, args...)
	f := c.call(wire.OpCommand, wire.AppendCommandRequest(nil, &cmd))
	if f.Flags.Has(wire.FlagError) {
		e := errorOf(c.t, f)
		return kv.Reply{Status: e.Status, Message: e.Message}
	}
	var r kv.Reply
	if err := wire.DecodeReply(f.Body, &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// summary renders a reply for the table: "!Status: message" or the value.
func summary(r kv.Reply) string {
	if r.Status != kv.StatusSuccess {
		return "!" + r.Status.String() + ": " + r.Message
	}
	switch r.Type {
	case kv.ReplyNil:
		return "nil"
	case kv.ReplyOK:
		return "OK"
	case kv.ReplyInt:
		return fmt.Sprint(r.Int)
	case kv.ReplyBulk:
		return string(r.Bulk)
	}
	parts := make([]string, len(r.Array))
	for i, e := range r.Array {
		parts[i] = summary(e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestHostileCommandArgumentsNative sends issue #13's extreme arguments
// through the native protocol's Command frame — the same store handlers the
// RESP regression table reaches — and checks each answer and that the
// connection and the node survive every one of them (a panic would answer
// StatusInternal and close the connection).
func TestHostileCommandArgumentsNative(t *testing.T) {
	h := newHarness(t)
	c := h.dialReady()
	c.put("sr", []byte("hello"))
	for _, row := range []struct {
		op   kv.CmdOp
		key  string
		args []string
		want string
	}{
		{kv.CmdSetRange, "sr", []string{i64max, "x"}, "!BadRequest: string exceeds maximum allowed size (proto-max-bulk-len)"},
		{kv.CmdSetRange, "sr", []string{"9223372036854775806", "xy"}, "!BadRequest: string exceeds maximum allowed size (proto-max-bulk-len)"},
		{kv.CmdSetRange, "sr", []string{"536870911", "x"}, "!ItemTooLarge: "},
		{kv.CmdSetRange, "sr", []string{i64min, "x"}, "!BadRequest: offset is out of range"},
		{kv.CmdGetRange, "sr", []string{i64min, i64max}, "hello"},
		{kv.CmdGetRange, "sr", []string{i64min, i64min}, "h"},
		{kv.CmdIncrBy, "n", []string{i64max}, i64max},
		{kv.CmdIncrBy, "n", []string{"1"}, "!BadRequest: increment or decrement would overflow"},
		{kv.CmdIncrByFloat, "f", []string{"10"}, "10"},
		{kv.CmdIncrByFloat, "f", []string{"0.1"}, "10.1"},
		{kv.CmdIncrByFloat, "f", []string{"inf"}, "!BadRequest: increment would produce NaN or Infinity"},
		{kv.CmdRPush, "l", []string{"a", "b", "a"}, "3"},
		{kv.CmdLRange, "l", []string{i64min, i64max}, "[a b a]"},
		{kv.CmdLIndex, "l", []string{i64min}, "nil"},
		{kv.CmdLSet, "l", []string{i64max, "x"}, "!BadRequest: index out of range"},
		{kv.CmdLRem, "l", []string{i64min, "a"}, "2"},
		{kv.CmdLPop, "l", []string{i64max}, "[b]"},
		{kv.CmdHIncrByFloat, "h", []string{"f", "inf"}, "!BadRequest: value is NaN or Infinity"},
		{kv.CmdZAdd, "z", []string{"inf", "a", "-inf", "b"}, "2"},
		{kv.CmdZIncrBy, "z", []string{"-inf", "a"}, "!BadRequest: resulting score is not a number (NaN)"},
		{kv.CmdZRange, "z", []string{i64min, i64max}, "[b a]"},
		{kv.CmdZRangeByScore, "z", []string{"-inf", "+inf", "LIMIT", i64max, i64max}, "[]"},
		{kv.CmdZRangeByScore, "z", []string{"-inf", "+inf", "LIMIT", i64min, "1"}, "[]"},
		{kv.CmdXAdd, "s", []string{idMax, "f", "v"}, idMax},
		{kv.CmdXAdd, "s", []string{"*", "f", "v"}, "!BadRequest: The stream has exhausted the last possible ID, unable to add more items"},
		{kv.CmdXAdd, "s", []string{"1-1", "f", "v"}, "!BadRequest: The stream has exhausted the last possible ID, unable to add more items"},
		{kv.CmdXRange, "s", []string{"(" + idMax, "+"}, "!BadRequest: invalid start ID for the interval"},
		{kv.CmdXRange, "s", []string{"-", "+", "COUNT", i64min}, "nil"},
		{kv.CmdXRange, "s", []string{"-", "+", "COUNT", i64max}, "[[" + idMax + " [f v]]]"},
		{kv.CmdXTrim, "s", []string{"MAXLEN", i64max}, "0"},
		{kv.CmdLockAcquire, "lk", []string{"t", i64max}, "!BadRequest: lock ttl is out of range"},
	} {
		if got := summary(c.command(row.op, row.key, row.args...)); got != row.want {
			t.Errorf("%v %s %q = %s, want %s", row.op, row.key, row.args, got, row.want)
		}
	}
	// Expire and Put with the longest TTL a frame carries keep the key
	// (capped at year 2262) instead of wrapping into the past.
	kb := wire.AppendExpireRequest(nil, "sr", time.Duration(math.MaxInt64))
	if r := resultOf(t, c.call(wire.OpExpire, kb)); r.Status != kv.StatusSuccess {
		t.Fatalf("Expire with the longest TTL: %v", r.Status)
	}
	if r := c.get("sr"); r.Status != kv.StatusSuccess {
		t.Fatalf("the key expired at once: %v", r.Status)
	}
	c.ping()
	if n := h.obs.panics.Load(); n != 0 {
		t.Fatalf("%d contained panics", n)
	}
}

// FuzzCommandArgs sends arbitrary arguments for every data-structure
// command (and node-level command) through the native protocol's Command
// frame: each must be answered by its id with anything but StatusInternal
// (a contained panic, also counted by the observer), and the connection
// must stay in sync. `go test` runs the seed corpus only: every command with
// empty, ordinary and extreme arguments.
func FuzzCommandArgs(f *testing.F) {
	h := newHarness(f)
	seeds := []string{"", "v", i64max + "\x00x", i64min + "\x00" + i64max, "-inf\x00+inf\x00LIMIT\x00" + i64max + "\x00" + i64min,
		idMax + "\x00f\x00v\x00COUNT\x00" + i64max, "g\x00c\x000\x00" + idMax + "\x00RETRYCOUNT\x00" + i64min, "nan\x00\xff"}
	for op := kv.CmdOp(1); op < 512; op++ {
		if strings.HasPrefix(op.String(), "CmdOp(") {
			continue
		}
		for _, s := range seeds {
			f.Add(uint16(op), "k", []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, op uint16, key string, blob []byte) {
		nc, err := net.DialTimeout("tcp", h.addr, ioWait)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c := &rawClient{t: t, nc: nc, fr: wire.NewFrameReader(nc, 0)}
		if r := c.handshake(wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: storeName}); r.Status != kv.StatusSuccess {
			t.Fatalf("handshake: %+v", r)
		}
		var args [][]byte
		if len(blob) > 0 {
			args = bytes.SplitN(blob, []byte{0}, 32)
		}
		cmd := kv.Cmd{Op: kv.CmdOp(op), Key: key, Args: args}
		fr := c.call(wire.OpCommand, wire.AppendCommandRequest(nil, &cmd))
		if fr.Flags.Has(wire.FlagError) {
			if e := errorOf(t, fr); e.Status == kv.StatusInternal {
				t.Fatalf("%v %q %q: a contained panic", cmd.Op, key, args)
			}
		}
		c.ping()
		if n := h.obs.panics.Load(); n != 0 {
			t.Fatalf("%v %q %q: %d contained panic(s)", cmd.Op, key, args, n)
		}
	})
}
