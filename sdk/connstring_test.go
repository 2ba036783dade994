package sdk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConnString(t *testing.T) {
	good := []struct {
		in   string
		want ConnString
	}{
		{"zaris://inproc/cache", ConnString{Inproc: true, Store: "cache"}},
		{"zaris://127.0.0.1:7861/default", ConnString{Endpoints: []string{"127.0.0.1:7861"}, Store: "default"}},
		{"zaris://a:1,b:2,c/orders", ConnString{Endpoints: []string{"a:1", "b:2", "c:7861"}, Store: "orders"}},
		{"zaris://[::1]:7000/s", ConnString{Endpoints: []string{"[::1]:7000"}, Store: "s"}},
		{"zaris://h:1/s?token=t0k&timeout=250ms", ConnString{Endpoints: []string{"h:1"}, Store: "s", Token: "t0k", Timeout: 250 * time.Millisecond}},
		{"zariss://h:1/s?ca=/ca.pem&cert=/c.pem&key=/k.pem&token=x&servername=zaris.local",
			ConnString{TLS: true, Endpoints: []string{"h:1"}, Store: "s", CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem", Token: "x", ServerName: "zaris.local"}},
	}
	for _, c := range good {
		got, err := ParseConnString(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if strings.Join(got.Endpoints, ",") != strings.Join(c.want.Endpoints, ",") {
			t.Errorf("%s: endpoints %v", c.in, got.Endpoints)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.in, got, c.want)
		}
	}
	bad := []string{
		"", "inproc/x", "redis://h:1/s", "zaris://inproc/", "zaris://inproc", "zaris://h:1/", "zaris:///s",
		"zaris://h:99999/s", "zaris://h:0/s", "zaris://h:x/s", "zaris://:1/s", "zaris://h:1/bad name",
		"zaris://h:1/s?nope=1", "zaris://h:1/s?ca=/x", "zariss://h:1/s?cert=/c", "zaris://h:1/s?timeout=-1s",
		"zaris://h:1/s?token=a&token=b", "zariss://inproc/x", "zaris://inproc/x?token=1",
		"zaris://h:1/" + strings.Repeat("s", 65),
	}
	for _, in := range bad {
		if _, err := ParseConnString(in); !errors.Is(err, ErrInvalidConnString) {
			t.Errorf("%q: err = %v, want ErrInvalidConnString", in, err)
		}
	}
	_, err := ParseConnString("zaris://h:1/s?token=secret&nope=1")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("token leaked into the error: %v", err)
	}
}

func TestConnectRejectsMalformedString(t *testing.T) {
	if _, err := Connect(context.Background(), "memcached://x/y"); !errors.Is(err, ErrInvalidConnString) {
		t.Fatalf("err = %v", err)
	}
}

// TestConnStringUserPassword: user= and password= name an ACL user and its
// password (password= is token= under another name; both is an error),
// and a password never shows in an error.
func TestConnStringUserPassword(t *testing.T) {
	cs, err := sdk.ParseConnString("zaris://h:1/s?user=app&password=pw")
	if err != nil || cs.User != "app" || cs.Token != "pw" {
		t.Fatalf("%+v %v", cs, err)
	}
	if _, err := sdk.ParseConnString("zaris://h:1/s?password=pw&token=t"); err == nil {
		t.Fatal("password and token together accepted")
	}
	_, err = sdk.ParseConnString("zaris://h:1/s?password=hunter2&bogus=1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("password leaked or accepted: %v", err)
	}
}
