package resp

import (
	"bytes"
	"testing"
)

// FuzzKeyAhead: the pipeline read-ahead's scanner never panics, and a
// command it claims to have read is the command the parser reads there —
// the same length and the same second argument — so that it can never
// warm one command's key as another's or step past a command boundary —
// and the field and last argument it reads are the parser's.
func FuzzKeyAhead(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n", "*0\r\n", "*1\r\n$-1\r\n", "*-5\r\n",
		"*2\r\n$03\r\nGET\r\n$1\r\nk\r\n", "*1\r\n$99999999999999999999\r\n", "*3\r\n$3\r\nSET\r\n$2\r\n\r\n\r\n$0\r\n\r\n",
		"*2\r\n$3\r\nGET\r\n$5\r\nab", "PING\r\n", "*2\r\r\n", "*1\r\n$1073741825\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lim := Limits{MaxBulkLen: 1 << 30, MaxArgs: 1 << 20, MaxInline: 1 << 16}.withDefaults()
		for buf := in; len(buf) > 0; {
			key, field, last, n := keyAhead(buf)
			if n == 0 {
				return
			}
			var p Parser
			p.Reset()
			args, pn, err := p.Next(buf, &lim)
			if err != nil || pn != n {
				t.Fatalf("read ahead %d bytes of %q, the parser %d (err %v)", n, buf, pn, err)
			}
			if want := argOrNil(args, 1); !bytes.Equal(key, want) || (key == nil) != (want == nil) {
				t.Fatalf("read ahead key %q, the parser's second argument %q", key, want)
			}
			if want := argOrNil(args, 2); !bytes.Equal(field, want) || (field == nil) != (want == nil) {
				t.Fatalf("read ahead field %q, the parser's third argument %q", field, want)
			}
			var wantLast []byte
			if len(args) > 2 {
				wantLast = args[len(args)-1]
			}
			if !bytes.Equal(last, wantLast) || (last == nil) != (wantLast == nil) {
				t.Fatalf("read ahead last argument %q, the parser's %q", last, wantLast)
			}
			buf = buf[n:]
		}
	})
}

func argOrNil(args [][]byte, i int) []byte {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// TestKeyAheadStopsWhereThePipelineDoes: the scanner reads every complete
// command of a pipeline, in order, and stops at the first incomplete one.
func TestKeyAheadStopsWhereThePipelineDoes(t *testing.T) {
	pipeline := "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$2\r\nk3"
	var keys []string
	buf := []byte(pipeline)
	for {
		key, _, _, n := keyAhead(buf)
		if n == 0 {
			break
		}
		if key != nil {
			keys = append(keys, string(key))
		}
		buf = buf[n:]
	}
	if want := []string{"k1", "k2"}; len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
		t.Fatalf("keys read ahead %q, want %q", keys, want)
	}
	if !bytes.HasPrefix(buf, []byte("*2\r\n$3\r\nGET\r\n$2\r\nk3")) {
		t.Fatalf("stopped at %q, want the incomplete GET k3", buf)
	}
}

// FuzzShortHeader: the parser's one-pass header read (shortHeader) agrees
// with the general one (lineEnd, then parseInt) on every line it accepts —
// the same value, the same length — so taking it changes no command and no
// error.
func FuzzShortHeader(f *testing.F) {
	for _, s := range []string{"*3\r\n", "$0\r\n", "$00\r\n", "*-1\r\n", "$123456789012345678\r\n", "$1234567890123456789\r\n", "*1\r", "$+1\r\n", "*12x\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		if len(buf) == 0 || buf[0] != '*' && buf[0] != '$' {
			return // its callers have read the lead byte
		}
		v, n, ok := shortHeader(buf)
		if !ok {
			return
		}
		nl, found := lineEnd(buf, 1<<10)
		if !found || nl != n-1 || nl < 2 || buf[nl-1] != '\r' {
			t.Fatalf("%q: shortHeader read %d bytes, the line ends at %d", buf, n, nl)
		}
		if want, ok := parseInt(buf[1 : nl-1]); !ok || want != v {
			t.Fatalf("%q: shortHeader %d, parseInt %d (%v)", buf, v, want, ok)
		}
	})
}
