package kv

import (
	"errors"
	"math"
	"testing"
)

func TestStatusNamesAndErrors(t *testing.T) {
	for s := StatusSuccess; s < statusCount; s++ {
		if s.String() == "" || s.String()[0] == 'S' && s != StatusSuccess {
			t.Errorf("status %d has name %q", s, s.String())
		}
		if (s.Err() == nil) != (s == StatusSuccess) {
			t.Errorf("%v.Err() = %v", s, s.Err())
		}
	}
	if Status(200).Valid() || Status(200).String() != "Status(200)" {
		t.Fatal("unknown status")
	}
	// The fixed order of API.md: append only.
	if StatusTimeout != 13 || StatusWrongType != 14 || StatusInternal != 15 {
		t.Fatal("status numbering changed: it is part of the wire protocol")
	}
	r := Result{Status: StatusConflict}
	if r.OK() || !errors.Is(r.Err(), ErrConflict) {
		t.Fatal("Result.Err")
	}
	rep := Reply{Status: StatusBadRequest, Message: "syntax error"}
	if !errors.Is(rep.Err(), ErrBadRequest) || rep.Err().Error() != "zaris: bad request: syntax error" {
		t.Fatalf("Reply.Err = %v", rep.Err())
	}
}

func TestRedirectStatuses(t *testing.T) {
	for _, s := range []Status{StatusMoved, StatusOwnershipChanging, StatusMigrating, StatusReplicaSyncPending, StatusReplicaWriteRejected, StatusUnavailable} {
		if !s.Redirect() {
			t.Errorf("%v must refresh the routing table", s)
		}
	}
	for _, s := range []Status{StatusSuccess, StatusNotFound, StatusConflict, StatusTimeout} {
		if s.Redirect() {
			t.Errorf("%v must not refresh the routing table", s)
		}
	}
}

func TestFormatFloatLikeRedis(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: constant arithmetic would be exact
	cases := map[float64]string{1.5: "1.5", 3: "3", math.Inf(1): "inf", math.Inf(-1): "-inf", tenth + fifth: "0.30000000000000004", 1e21: "1e+21"}
	for f, want := range cases {
		if got := string(FormatFloat(f)); got != want {
			t.Errorf("FormatFloat(%v) = %q, want %q", f, got, want)
		}
	}
	if NewCmd(CmdHSet, "k", "a").Op.String() != "HSET" || CmdOp(9999).Valid() {
		t.Fatal("command names")
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1000: "1000 B", 1024: "1 KiB", 1536: "1.5 KiB", 4 << 20: "4 MiB",
		256 << 20: "256 MiB", 3 << 30: "3 GiB", (1 << 30) + (1 << 29): "1.5 GiB", 1 << 62: "4 EiB", 2000: "1.95 KiB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestResultErrCarriesDetail(t *testing.T) {
	r := Result{Status: StatusItemTooLarge, Detail: "value of 2048 bytes exceeds --max-item-bytes 1024"}
	err := r.Err()
	if !errors.Is(err, ErrItemTooLarge) || err.Error() != "zaris: item too large: value of 2048 bytes exceeds --max-item-bytes 1024" {
		t.Fatalf("Err() = %v", err)
	}
	if (Result{Status: StatusNotFound}).Err() != ErrNotFound || (Result{}).Err() != nil {
		t.Fatal("a status without detail must return its sentinel; success nil")
	}
}
