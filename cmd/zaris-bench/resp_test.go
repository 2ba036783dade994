package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadReply(t *testing.T) {
	cases := []struct {
		in   string
		kind byte
		null bool
		line string
	}{
		{"+OK\r\n", '+', false, "OK"},
		{"-ERR wrong\r\n", '-', false, "ERR wrong"},
		{":42\r\n", ':', false, "42"},
		{"$5\r\nhello\r\n", '$', false, ""},
		{"$0\r\n\r\n", '$', false, ""},
		{"$-1\r\n", '$', true, ""},
		{"*-1\r\n", '*', true, ""},
		{"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", '*', false, ""},
	}
	for _, c := range cases {
		br := bufio.NewReader(strings.NewReader(c.in + "+NEXT\r\n"))
		rep, err := readReply(br)
		if err != nil || rep.kind != c.kind || rep.null != c.null || string(rep.line) != c.line {
			t.Errorf("%q: %+v, %v", c.in, rep, err)
			continue
		}
		// The whole reply was consumed, and nothing more.
		if next, err := readReply(br); err != nil || string(next.line) != "NEXT" {
			t.Errorf("%q: next reply %+v, %v", c.in, next, err)
		}
	}

	bad := []string{
		"",                  // EOF before a reply
		"+OK",               // truncated line
		"+OK\n",             // LF without CR
		"?\r\n",             // unknown type
		":x\r\n",            // bad integer
		"$-2\r\n",           // bad length
		"$5\r\nhel",         // truncated bulk
		"$2\r\nhello\r\n",   // bulk longer than declared
		"$999999999999\r\n", // over the bulk limit
		"*1\r\n",            // truncated array
		strings.Repeat("*1\r\n", maxArrayDepth+2) + ":1\r\n",
	}
	for _, in := range bad {
		if _, err := readReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%q: no error", in)
		} else if in == "" && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("empty input: %v, want io.ErrUnexpectedEOF", err)
		}
	}
}

func TestClassifyRESP(t *testing.T) {
	cases := []struct {
		kind opKind
		rep  reply
		want outcome
	}{
		{opGet, reply{kind: '$', n: 32}, outHit},
		{opGet, reply{kind: '$', null: true, n: -1}, outMiss},
		{opGet, reply{kind: '-', line: []byte("WRONGTYPE")}, outError},
		{opGet, reply{kind: '+', line: []byte("OK")}, outError},
		{opSet, reply{kind: '+', line: []byte("OK")}, outOK},
		{opSet, reply{kind: '+', line: []byte("QUEUED")}, outError},
		{opSet, reply{kind: '-', line: []byte("OOM")}, outError},
	}
	for _, c := range cases {
		if got, _ := classifyRESP(c.kind, c.rep); got != c.want {
			t.Errorf("%v %+v: %v, want %v", c.kind, c.rep, got, c.want)
		}
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(appendCommand(nil, []byte("SET"), []byte("k"), []byte("")))
	if want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"; got != want {
		t.Errorf("appendCommand = %q, want %q", got, want)
	}
}

// FuzzReadReply: the parser never panics, and a reply it accepts re-reads
// identically after any bytes that follow it.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "-ERR x\r\n", ":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*2\r\n+a\r\n$1\r\nb\r\n", "*-1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		br := bufio.NewReaderSize(r, 16)
		rep, err := readReply(br)
		if err != nil {
			return
		}
		consumed := len(b) - r.Len() - br.Buffered()
		// Re-parse the consumed prefix alone: it must be a complete reply.
		rep2, err := readReply(bufio.NewReaderSize(bytes.NewReader(b[:consumed]), 16))
		if err != nil || rep2.kind != rep.kind || rep2.null != rep.null || rep2.n != rep.n {
			t.Fatalf("prefix %q: %+v, %v; first parse %+v", b[:consumed], rep2, err, rep)
		}
	})
}
