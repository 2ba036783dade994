package native_test

// A client that goes away mid-pipeline: whatever the server executed is in
// the store whole, it executed a prefix of the pipeline, and every write a
// client saw acknowledged is there.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// 1000 pipelined puts and half of one more, then close without reading a
// single answer. The puts the server executed (counted by the observer)
// are exactly a prefix of the pipeline, each stored whole; the half one is
// not executed.
func TestDisconnectMidPipeline(t *testing.T) {
	for _, mode := range []string{"close", "reset"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t)
			hc := h.startHealthy()
			c := h.dialReady()

			const n = 1000
			key := func(i int) string { return fmt.Sprintf("mp-%04d", i) }
			val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%50) }
			var pipeline []byte
			for i := range n + 1 {
				pipeline = append(pipeline, frame(uint32(i+10), wire.OpPut, wire.AppendPutRequest(nil, key(i), val(i), nil))...)
			}
			last := frame(uint32(n+10), wire.OpPut, wire.AppendPutRequest(nil, key(n), val(n), nil))
			pipeline = pipeline[:len(pipeline)-len(last)/2]
			c.write(pipeline)
			if mode == "reset" {
				_ = c.nc.(*net.TCPConn).SetLinger(0) // RST instead of FIN
			}
			_ = c.nc.Close()
			h.waitConns(1)
			hc.finish() // every healthy put was read: the rest of the count is c's

			executed := h.obs.count(wire.OpPut, kv.StatusSuccess) - int(hc.ops.Load())
			present := 0
			for i := range n + 1 {
				r := h.store.Get(key(i))
				if r.Status == kv.StatusNotFound {
					continue
				}
				if present != i {
					t.Fatalf("%s stored but %s is not: not a prefix of the pipeline", key(i), key(present))
				}
				if !bytes.Equal(r.Value, val(i)) {
					t.Fatalf("%s stored partially: %d bytes", key(i), len(r.Value))
				}
				present++
			}
			if present != executed {
				t.Fatalf("server executed %d puts, the store holds %d", executed, present)
			}
			if present > n {
				t.Fatal("the half-sent put was executed")
			}
			t.Logf("%s: the server executed %d of %d puts before the connection went", mode, executed, n)
			if recs := h.logsAbout(c.addr()); len(recs) > 1 {
				t.Fatalf("logged %d times: %v", len(recs), recs)
			}
		})
	}
}

// A client pipelines puts over a small key space and reads answers while it
// writes, then resets the connection in the middle of it all. For every key,
// the store holds a value at least as new as the newest one acknowledged,
// and every stored value is one the client sent, whole.
func TestAcknowledgedWritesSurviveAbruptDisconnect(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			h := newHarness(t)
			hc := h.startHealthy()
			c := h.dialReady()

			const keys = 40
			const total = 20000
			stopAfter := 500 + rng.IntN(5000) // acknowledgements read before the reset
			keyOf := func(seq int) string { return fmt.Sprintf("ack-%02d", seq%keys) }
			valueOf := func(seq int) []byte {
				return []byte(keyOf(seq) + ";seq=" + strconv.Itoa(seq) + ";" + strings.Repeat("p", seq%300))
			}

			writeErr := make(chan error, 1)
			go func() {
				var buf []byte
				for seq := 1; seq <= total; {
					buf = buf[:0]
					for j := 0; j < 1+rng.IntN(64) && seq <= total; j, seq = j+1, seq+1 {
						buf = append(buf, frame(uint32(seq), wire.OpPut, wire.AppendPutRequest(nil, keyOf(seq), valueOf(seq), nil))...)
					}
					_ = c.nc.SetWriteDeadline(time.Now().Add(ioWait))
					if _, err := c.nc.Write(buf); err != nil {
						writeErr <- err
						return
					}
				}
				writeErr <- nil
			}()

			acked := map[string]int{} // key → newest acknowledged seq
			for range stopAfter {
				f := c.read()
				r := resultOf(t, f)
				if !r.OK() {
					t.Fatalf("put %d: %v", f.ID, r.Status)
				}
				seq := int(f.ID)
				acked[keyOf(seq)] = max(acked[keyOf(seq)], seq)
			}
			_ = c.nc.(*net.TCPConn).SetLinger(0)
			_ = c.nc.Close()
			if err := <-writeErr; err != nil && !closedByPeer(err) && !strings.Contains(err.Error(), "use of closed") {
				t.Fatalf("writer: %v", err)
			}
			h.waitConns(1)
			hc.finish()

			for k := range keys {
				key := fmt.Sprintf("ack-%02d", k)
				r := h.store.Get(key)
				if acked[key] == 0 {
					continue
				}
				if !r.OK() {
					t.Fatalf("%s: acknowledged seq %d, store has %v", key, acked[key], r.Status)
				}
				parts := strings.SplitN(string(r.Value), ";", 3)
				seq, err := strconv.Atoi(strings.TrimPrefix(parts[1], "seq="))
				if err != nil || parts[0] != key || !bytes.Equal(r.Value, valueOf(seq)) {
					t.Fatalf("%s holds %q: not a value the client sent", key, r.Value)
				}
				if seq < acked[key] {
					t.Fatalf("%s: acknowledged seq %d, store went back to seq %d", key, acked[key], seq)
				}
			}
			t.Logf("read %d acknowledgements over %d keys before the reset", stopAfter, len(acked))
		})
	}
}
