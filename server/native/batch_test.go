package native_test

// Batches above PoolBatchThreshold run on the worker pool: each is still
// answered once, by its id, with one result per item in item order —
// checked against a plain-map model — while other clients and the
// connection's own inline requests go on.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

type batchCase struct {
	body []byte
	want []kv.Result // Status and Value only
}

// randomBatch builds a batch of n items over keys of its own prefix, with
// the results a plain map predicts when the items run in order.
func randomBatch(rng *rand.Rand, prefix string, n int) batchCase {
	model := map[string][]byte{}
	body := wire.AppendBatchRequestHeader(nil, n)
	want := make([]kv.Result, 0, n)
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, rng.IntN(16))
		switch op := rng.IntN(10); {
		case op < 4:
			v := []byte(fmt.Sprintf("%s#%d", key, i))
			body = wire.AppendBatchItem(body, wire.BatchPut, key, v, nil)
			model[key] = v
			want = append(want, kv.Result{Status: kv.StatusSuccess})
		case op < 8:
			body = wire.AppendBatchItem(body, wire.BatchGet, key, nil, nil)
			if v, ok := model[key]; ok {
				want = append(want, kv.Result{Status: kv.StatusSuccess, Value: v})
			} else {
				want = append(want, kv.Result{Status: kv.StatusNotFound})
			}
		case op < 9:
			body = wire.AppendBatchItem(body, wire.BatchDelete, key, nil, nil)
			if _, ok := model[key]; ok {
				delete(model, key)
				want = append(want, kv.Result{Status: kv.StatusSuccess})
			} else {
				want = append(want, kv.Result{Status: kv.StatusNotFound})
			}
		default:
			body = wire.AppendBatchItem(body, wire.BatchOp(200), key, nil, nil)
			want = append(want, kv.Result{Status: kv.StatusBadRequest})
		}
	}
	return batchCase{body: body, want: want}
}

func checkBatch(f wire.Frame, bc batchCase) error {
	if f.Flags.Has(wire.FlagError) {
		return fmt.Errorf("batch %d refused", f.ID)
	}
	res, err := wire.DecodeBatchResult(f.Body, nil)
	if err != nil {
		return err
	}
	if len(res) != len(bc.want) {
		return fmt.Errorf("batch %d: %d results for %d items", f.ID, len(res), len(bc.want))
	}
	for i, w := range bc.want {
		if res[i].Status != w.Status || !bytes.Equal(res[i].Value, w.Value) {
			return fmt.Errorf("batch %d item %d: got %v %q, want %v %q", f.ID, i, res[i].Status, res[i].Value, w.Status, w.Value)
		}
	}
	return nil
}

func TestLargeBatchesOnThePool(t *testing.T) {
	const threshold = 16
	h := newHarness(t, func(c *native.Config) {
		c.PoolBatchThreshold = threshold
		c.MinWorkers, c.MaxWorkers = 1, 4
	})
	hc := h.startHealthy()

	const clients = 6
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for ci := range clients {
		c := h.dialReady()
		rng := rand.New(rand.NewPCG(uint64(ci), 7))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runBatches(c, rng, fmt.Sprintf("c%d", ci), threshold)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	hc.progress(10)
	hc.finish()
}

// runBatches pipelines batches of sizes on both sides of the threshold, each
// over its own keys, interleaved with pings, and checks every answer.
func runBatches(c *rawClient, rng *rand.Rand, prefix string, threshold int) error {
	cases := map[uint32]batchCase{}
	var pipeline []byte
	for i := range 40 {
		id := uint32(1000 + i)
		n := threshold + 1 + rng.IntN(600)
		if i%4 == 0 {
			n = 1 + rng.IntN(threshold) // inline
		}
		bc := randomBatch(rng, fmt.Sprintf("%s-b%d", prefix, i), n)
		cases[id] = bc
		pipeline = append(pipeline, frame(id, wire.OpBatch, bc.body)...)
		pipeline = append(pipeline, frame(id+10000, wire.OpPing, nil)...)
	}
	_ = c.nc.SetDeadline(time.Now().Add(2 * ioWait))
	wrote := make(chan error, 1)
	go func() { _, err := c.nc.Write(pipeline); wrote <- err }() // answers flow meanwhile
	defer func() { <-wrote }()
	pings := 0
	for len(cases) > 0 || pings < 40 {
		f, err := c.fr.Next()
		if err != nil {
			return err
		}
		if f.Op == wire.OpPing {
			pings++
			continue
		}
		bc, ok := cases[f.ID]
		if !ok {
			return fmt.Errorf("unexpected or repeated answer %d", f.ID)
		}
		delete(cases, f.ID)
		if err := checkBatch(f, bc); err != nil {
			return err
		}
	}
	return nil
}
