package wire

import (
	"errors"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/zaris-io/zaris/internal/kv"
)

func TestCommandRoundTrip(t *testing.T) {
	cases := []kv.Cmd{
		kv.NewCmd(kv.CmdHSet, "user:1", "name", "Ada", "age", "36"),
		{Op: kv.CmdHGetAll, Key: "k"},
		{Op: kv.CmdLPush, Key: "bin\x00key", Args: [][]byte{{0, 1, 2}, {}}},
	}
	for _, c := range cases {
		body := AppendCommandRequest(nil, &c)
		var got kv.Cmd
		if err := DecodeCommandRequest(body, &got); err != nil {
			t.Fatalf("%v: %v", c.Op, err)
		}
		if got.Op != c.Op || got.Key != c.Key || len(got.Args) != len(c.Args) {
			t.Fatalf("got %+v, want %+v", got, c)
		}
		for i := range c.Args {
			if string(got.Args[i]) != string(c.Args[i]) {
				t.Fatalf("arg %d: %q", i, got.Args[i])
			}
		}
		var generic []any
		if err := msgpack.Unmarshal(body, &generic); err != nil || len(generic) != 3 {
			t.Fatalf("not msgpack: %v %v", generic, err)
		}
	}
}

func TestReplyRoundTrip(t *testing.T) {
	cases := []kv.Reply{
		kv.NilReply(),
		kv.OKReply(),
		kv.IntReply(-42),
		kv.BulkReply([]byte("v")),
		kv.BulkReply([]byte{}),
		{Status: kv.StatusWrongType},
		{Status: kv.StatusBadRequest, Message: "syntax error"},
		{Type: kv.ReplyArray, Array: []kv.Reply{kv.BulkReply([]byte("a")), kv.NilReply(),
			{Type: kv.ReplyArray, Array: []kv.Reply{kv.IntReply(1)}}}, Version: 3, Revision: 9},
		{Type: kv.ReplyArray, Array: []kv.Reply{}},
	}
	for _, c := range cases {
		body := AppendReply(nil, &c)
		var got kv.Reply
		if err := DecodeReply(body, &got); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("got %+v, want %+v", got, c)
		}
	}
}

func TestReplyDepthIsBounded(t *testing.T) {
	r := kv.IntReply(1)
	for range MaxReplyDepth + 2 {
		r = kv.ArrayReply([]kv.Reply{r})
	}
	var got kv.Reply
	if err := DecodeReply(AppendReply(nil, &r), &got); !errors.Is(err, ErrMalformedBody) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	c := kv.NewCmd(kv.CmdZAdd, "z", "1", "a")
	f.Add(AppendCommandRequest(nil, &c))
	r := kv.Reply{Type: kv.ReplyArray, Array: []kv.Reply{kv.BulkReply([]byte("x"))}}
	f.Add(AppendReply(nil, &r))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c kv.Cmd
		if err := DecodeCommandRequest(b, &c); err == nil {
			// What decodes must re-encode to something that decodes the same.
			var again kv.Cmd
			if err := DecodeCommandRequest(AppendCommandRequest(nil, &c), &again); err != nil || again.Op != c.Op || again.Key != c.Key {
				t.Fatalf("re-encoding %+v: %+v %v", c, again, err)
			}
		}
		var r kv.Reply
		_ = DecodeReply(b, &r)
	})
}
