package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// The README's tour of the primitives, compiled and run.
func Example_primitives() {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/example-primitives")
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Hashes().Set(ctx, "user:42", map[string][]byte{"name": []byte("Ada"), "plan": []byte("pro")})
	name, _, _ := c.Hashes().Get(ctx, "user:42", "name")
	c.Lists().RPush(ctx, "jobs", []byte("job-1"), []byte("job-2"))
	job, _, _ := c.Lists().LPop(ctx, "jobs")
	c.Sets().Add(ctx, "{team}:admins", "ada", "grace")
	c.SortedSets().Add(ctx, "leaderboard", sdk.Member{Member: "ada", Score: 42}, sdk.Member{Member: "grace", Score: 7})
	top, _ := c.SortedSets().RevRange(ctx, "leaderboard", 0, 9)
	n, _ := c.Counters().Incr(ctx, "page:views")
	fmt.Println(string(name), string(job), top[0].Member, n)

	c.Streams().Add(ctx, "orders", []sdk.Field{{Name: "sku", Value: []byte("A1")}}, nil)
	c.Streams().CreateGroup(ctx, "orders", "billing", "0", true)
	entries, _ := c.Streams().ReadGroup(ctx, "orders", "billing", "worker-1", 10)
	acked, _ := c.Streams().Ack(ctx, "orders", "billing", entries[0].ID)
	fmt.Println(len(entries), acked)

	c.Put(ctx, "acct:a", []byte("100"), nil)
	c.Put(ctx, "acct:b", []byte("0"), nil)
	tx := c.Tx()
	tx.Get(ctx, "acct:a")
	tx.Get(ctx, "acct:b")
	tx.Put("acct:a", []byte("70"), nil).Put("acct:b", []byte("30"), nil)
	_, err = tx.Commit(ctx)
	fmt.Println(err == nil || errors.Is(err, sdk.ErrConflict))

	lease, err := c.Locks().Acquire(ctx, "report-builder", 30*time.Second)
	if err == nil {
		_, err2 := c.Locks().Acquire(ctx, "report-builder", 30*time.Second)
		fmt.Println(errors.Is(err2, sdk.ErrLockHeld))
		lease.Release(ctx)
	}

	w, _ := c.Watch().Prefix(ctx, "config:", &sdk.WatchOptions{Snapshot: true, IncludeValues: true})
	c.Put(ctx, "config:mode", []byte("fast"), nil)
	ev := <-w.Events()
	w.Close()
	fmt.Println(ev.Kind, ev.Key, string(ev.Value))

	sub, _ := c.PubSub().Subscribe(ctx, "news")
	c.PubSub().Publish(ctx, "news", []byte("hello"))
	msg := <-sub.Messages()
	sub.Close()
	fmt.Println(msg.Channel, string(msg.Payload))

	it := c.Scan().Scan(ctx, sdk.KeyRange{Prefix: "acct:"}, sdk.ScanOptions{IncludeValues: true})
	for it.Next(ctx) {
		fmt.Println(it.Item().Key, string(it.Item().Value))
	}
	// Output:
	// Ada job-1 ada 1
	// 1 1
	// true
	// true
	// put config:mode fast
	// news hello
	// acct:a 70
	// acct:b 30
}
