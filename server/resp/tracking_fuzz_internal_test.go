package resp

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
)

// trackingErrors are the texts parseTrackingArgs may answer (Redis's).
var trackingErrors = map[string]bool{
	msgSyntax:     true,
	msgNotInteger: true,
	"ERR A client can only redirect to a single other client": true,
	"ERR The client ID you want redirect to does not exist":   true,
}

// FuzzTrackingArgs: CLIENT TRACKING's argument parser, on any argument
// vector (NUL-separated in the input), never panics, answers only Redis's
// error texts, and what it accepts encodes back to arguments it parses to
// the same options. (FuzzCommands also sends arbitrary arguments to CLIENT
// TRACKING on a live node.)
func FuzzTrackingArgs(f *testing.F) {
	for _, seed := range []string{
		"on", "off", "ON\x00BCAST\x00PREFIX\x00a\x00PREFIX\x00b", "on\x00redirect\x002\x00optin\x00noloop",
		"on\x00redirect\x003", "on\x00redirect\x00x", "on\x00redirect", "on\x00prefix", "on\x00redirect\x002\x00redirect\x004",
		"maybe", "off\x00optout\x00optin\x00bcast", "on\x00PREFIX\x00\x00PREFIX\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	exists := func(id int64) bool { return id > 0 && id%2 == 0 }
	f.Fuzz(func(t *testing.T, in []byte) {
		args := bytes.Split(in, []byte{0})
		o, msg := parseTrackingArgs(args, exists)
		if msg != "" {
			if !trackingErrors[msg] {
				t.Fatalf("%q: unexpected error %q", args, msg)
			}
			return
		}
		re := [][]byte{[]byte("off")}
		if o.on {
			re[0] = []byte("on")
		}
		if o.redirect != 0 {
			re = append(re, []byte("REDIRECT"), []byte(strconv.FormatInt(o.redirect, 10)))
		}
		for _, f := range []struct {
			set  bool
			name string
		}{{o.bcast, "BCAST"}, {o.optin, "OPTIN"}, {o.optout, "OPTOUT"}, {o.noloop, "NOLOOP"}} {
			if f.set {
				re = append(re, []byte(f.name))
			}
		}
		for _, p := range o.prefixes {
			re = append(re, []byte("PREFIX"), []byte(p))
		}
		o2, msg2 := parseTrackingArgs(re, exists)
		if msg2 != "" || !reflect.DeepEqual(o, o2) {
			t.Fatalf("%q parsed to %+v; re-encoded %q parsed to %+v %q", args, o, re, o2, msg2)
		}
	})
}
