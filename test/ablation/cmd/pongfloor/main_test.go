package main

import "testing"

func TestPongsAnswersCompleteRequestsOnly(t *testing.T) {
	cfg := "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n"
	for _, tc := range []struct {
		in, out string
		used    int
	}{
		{"", "", 0},
		{string(ping), "+PONG\r\n", 14},
		{string(ping) + string(ping) + "*1\r\n$4\r\nPI", "+PONG\r\n+PONG\r\n", 28},
		{cfg, "-ERR pongfloor answers PING only\r\n", len(cfg)},
		{cfg[:len(cfg)-1], "", 0},
		{"*1\r\n$x\r\n", "", 0},
	} {
		out, used := pongs(nil, []byte(tc.in))
		if string(out) != tc.out || used != tc.used {
			t.Errorf("pongs(%q) = %q, %d; want %q, %d", tc.in, out, used, tc.out, tc.used)
		}
	}
}
