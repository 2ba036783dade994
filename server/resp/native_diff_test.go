package resp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/respdiff"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/resp"
	"github.com/zaris-io/zaris/server/store"
)

// nativeRESPNode is one node serving both protocols, with a native
// connection and a RESP connection open on it.
type nativeRESPNode struct {
	native net.Conn
	fr     *wire.FrameReader
	id     uint32
	resp   net.Conn
	rr     *bufio.Reader
	twins  map[string]bool // single-key RESP commands: the twin of the native op of the same name
}

var nativeWait = testscale.D(10 * time.Second)

func startNativeRESP(tb testing.TB) *nativeRESPNode {
	n, err := server.NewNode(testConfig(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = n.Stop(context.Background()) })
	x := &nativeRESPNode{twins: map[string]bool{}}
	for _, c := range resp.DiffCommands() {
		// A command naming other keys cannot run on the "n…" and "r…"
		// copies of the key space apart: not compared.
		x.twins[c.Name] = !c.MultiKey
	}
	if x.native, err = net.DialTimeout("tcp", n.ClientAddr().String(), nativeWait); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = x.native.Close() })
	x.fr = wire.NewFrameReader(x.native, 0)
	hs := wire.AppendFrame(nil, 0, wire.OpHandshake, 0,
		wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: server.DefaultStore}))
	if _, err := x.native.Write(hs); err != nil {
		tb.Fatal(err)
	}
	f, err := x.fr.Next()
	var hr wire.HandshakeResponse
	if err != nil || wire.DecodeHandshakeResponse(f.Body, &hr) != nil || hr.Status != kv.StatusSuccess {
		tb.Fatalf("handshake: %v %+v", err, hr)
	}
	if x.resp, err = net.DialTimeout("tcp", n.RESPAddr().String(), nativeWait); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = x.resp.Close() })
	x.rr = bufio.NewReader(x.resp)
	return x
}

// do sends one Command frame; the answer must come by its id, with a
// status this build knows.
func (x *nativeRESPNode) do(cmd kv.Cmd) (kv.Reply, error) {
	x.id++
	_ = x.native.SetDeadline(time.Now().Add(nativeWait))
	if _, err := x.native.Write(wire.AppendFrame(nil, x.id, wire.OpCommand, 0, wire.AppendCommandRequest(nil, &cmd))); err != nil {
		return kv.Reply{}, err
	}
	f, err := x.fr.Next()
	if err != nil {
		return kv.Reply{}, fmt.Errorf("no answer: %w", err)
	}
	if f.ID != x.id || !f.Flags.Has(wire.FlagResponse) {
		return kv.Reply{}, fmt.Errorf("answer %d %v to request %d", f.ID, f.Flags, x.id)
	}
	var r kv.Reply
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(f.Body, &e); err != nil {
			return r, err
		}
		r.Status, r.Message = e.Status, e.Message
	} else if err := wire.DecodeReply(f.Body, &r); err != nil {
		return r, err
	}
	if !r.Status.Valid() || r.Status == kv.StatusInternal {
		return r, fmt.Errorf("status %v (%s): not a typed answer", r.Status, r.Message)
	}
	return r, nil
}

func (x *nativeRESPNode) respDo(args ...string) (respdiff.Value, error) {
	_ = x.resp.SetDeadline(time.Now().Add(nativeWait))
	if _, err := x.resp.Write(respdiff.Encode(nil, args)); err != nil {
		return respdiff.Value{}, err
	}
	return respdiff.Read(x.rr)
}

// nativeText renders a native reply as the RESP2 reply would read.
func nativeText(r kv.Reply, sorted bool) string {
	switch r.Type {
	case kv.ReplyNil:
		return "nil"
	case kv.ReplyOK:
		return "OK"
	case kv.ReplyInt:
		return strconv.FormatInt(r.Int, 10)
	case kv.ReplyBulk:
		return strconv.Quote(string(r.Bulk))
	}
	parts := make([]string, len(r.Array))
	for i, e := range r.Array {
		parts[i] = nativeText(e, false)
	}
	if sorted {
		sort.Strings(parts)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func respText(v respdiff.Value, sorted bool) string {
	switch {
	case v.Null:
		return "nil"
	case v.Kind == '+' && v.Str == "OK":
		return "OK"
	case v.Kind == '+': // a status (TYPE): the engine answers it as a bulk
		return strconv.Quote(v.Str)
	case v.Kind == ':':
		return v.Str
	case v.Kind == '$':
		return strconv.Quote(v.Str)
	}
	parts := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		parts[i] = respText(e, false)
	}
	if sorted {
		sort.Strings(parts)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Native ops compared with their RESP twin by shape only (random picks,
// clock readings, and expiries: the two copies' expiries were set at
// different instants, so a relative one or a GT/LT against it may land on
// either side of a millisecond), and ops never sent: a transaction phase
// reserves keys for seconds, a lock is not a Redis command either way.
var (
	nativeUnordered = map[string]bool{"smembers": true, "hgetall": true, "hkeys": true, "hvals": true, "keys": true, "sinter": true, "sunion": true, "sdiff": true}
	nativeShapeOnly = map[string]bool{"spop": true, "srandmember": true, "hrandfield": true, "zrandmember": true, "randomkey": true,
		"xpending": true, "xclaim": true, "xautoclaim": true,
		"expire": true, "pexpire": true, "expireat": true, "pexpireat": true, "pttl": true, "pexpiretime": true}
	nativeSkip = map[kv.CmdOp]bool{kv.CmdTxPrepare: true, kv.CmdTxCommit: true, kv.CmdTxAbort: true}
)

var nativeExtremes = []string{"", "0", "1", "-1", "2", "a", "b", "f", "v", "inf", "-inf", "nan", "1e309", "1.5", "1.5e",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615", "+2", "02",
	"18446744073709551615-18446744073709551615", "1-1", "0-1", "-", "+", "(1", "[a", "WITHSCORES", "LIMIT", "COUNT", "MAXLEN", "\x00\xff"}

// FuzzNativeMatchesRESP feeds random commands (op numbers from kv's table,
// arguments drawn from extreme values and the fuzzer's bytes) through the
// native protocol, on a real listener: every request is answered by its id
// with a typed status (never StatusInternal), the node stays alive, and
// for an op with a RESP twin (the RESP command of the same name) the reply
// equals the RESP reply on the same state: the native op runs on key "n…",
// the RESP command on key "r…", both built by the same steps (commands
// that name other keys are not compared: the two copies would meet). `go test`
// runs the seed corpus; `make fuzz` explores.
func FuzzNativeMatchesRESP(f *testing.F) {
	x := startNativeRESP(f)
	var ops []kv.CmdOp
	for op := kv.CmdOp(1); op < 256; op++ {
		if op.Valid() && !nativeSkip[op] {
			ops = append(ops, op)
		}
	}
	for i := range ops {
		f.Add([]byte{byte(i), 0, 2, 4, 5, byte(i), 0, 1, 15, byte(i), 1, 3, 16, 17, 18}, []byte("x\x00y"))
		f.Add([]byte{byte(i), 2, 4, 1, 21, 13, 29, byte(i), 2, 2, 33, 34}, []byte("f\x00v"))
	}
	f.Fuzz(func(t *testing.T, prog, blob []byte) {
		pool := append([]string(nil), nativeExtremes...)
		for _, p := range bytes.Split(blob, []byte{0}) {
			pool = append(pool, string(p))
		}
		if _, err := x.respDo("FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		for i, steps := 0, 0; i+2 < len(prog) && steps < 12; steps++ {
			op := ops[int(prog[i])%len(ops)]
			key := "k" + strconv.Itoa(int(prog[i+1])%3)
			argc := int(prog[i+2]) % 6
			i += 3
			var args []string
			for j := 0; j < argc && i < len(prog); j, i = j+1, i+1 {
				args = append(args, pool[int(prog[i])%len(pool)])
			}
			x.step(t, op, key, args)
		}
	})
}

func (x *nativeRESPNode) step(t *testing.T, op kv.CmdOp, key string, args []string) {
	t.Helper()
	cmd := kv.NewCmd(op, "n"+key, args...)
	nr, err := x.do(cmd)
	if err != nil {
		t.Fatalf("%v %q %q: %v", op, cmd.Key, args, err)
	}
	if pong, err := x.respDo("PING"); err != nil || pong.Str != "PONG" {
		t.Fatalf("after %v %q: the node does not answer PING: %v %v", op, args, pong, err)
	}
	name := strings.ToLower(op.String())
	resync := func() {
		if _, err := x.respDo("DEL", "n"+key, "r"+key); err != nil {
			t.Fatal(err)
		}
	}
	if op.NodeLevel() || !x.twins[name] {
		// No RESP twin: typed and alive is all. A write changed the native
		// copy alone (ZSTORE made a sorted set the RESP copy never got), so
		// both copies start again from absent.
		if !op.NodeLevel() && store.CommandWrites(op) && nr.Status == kv.StatusSuccess {
			resync()
		}
		return
	}
	rv, err := x.respDo(append([]string{op.String(), "r" + key}, args...)...)
	if err != nil {
		t.Fatalf("RESP %s: %v", name, err)
	}
	switch {
	case rv.IsError() && strings.HasPrefix(rv.Str, "WRONGTYPE"):
		if nr.Status != kv.StatusWrongType {
			t.Fatalf("%v %q: RESP answers %s, native %v %s", op, args, rv.Str, nr.Status, nativeText(nr, false))
		}
	case rv.IsError():
		if nr.Status == kv.StatusSuccess {
			resync() // the front end refused what the engine accepts (arity, options it parses): states may differ
		}
	case nr.Status != kv.StatusSuccess:
		t.Fatalf("%v %q: RESP answers %s, native %v: %s", op, args, rv, nr.Status, nr.Message)
	case nativeShapeOnly[name]:
		if (rv.Null) != (nr.Type == kv.ReplyNil) || len(rv.Elems) != len(nr.Array) {
			t.Fatalf("%v %q: RESP %s, native %s", op, args, rv, nativeText(nr, false))
		}
		resync()
	default:
		if r, n := respText(rv, nativeUnordered[name]), nativeText(nr, nativeUnordered[name]); r != n {
			t.Fatalf("%v %q: RESP %s, native %s", op, args, r, n)
		}
	}
}
