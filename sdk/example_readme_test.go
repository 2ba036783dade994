package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// The README's first Go snippet (internal/readmetest checks that the README
// shows this body): connect, write, read, a CAS that keeps the TTL, and the
// errors a refused write returns (D38).
func Example_quickstart() {
	ctx := context.Background()
	// "zaris://inproc/<name>" embeds the engine in this process; against a
	// server or a cluster: "zaris://127.0.0.1:7861,127.0.0.1:7862/default".
	c, err := sdk.Connect(ctx, "zaris://inproc/quickstart")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	r, err := c.Put(ctx, "user:42", []byte("Ada"), &sdk.PutOptions{TTL: time.Hour})
	if err != nil {
		log.Fatal(err) // a refused write: the error says why (see below)
	}
	fmt.Println(r.Status, "version", r.Version)

	r, err = c.Get(ctx, "user:42")
	fmt.Println(string(r.Value), "version", r.Version, "ttl ≤ 1h:", r.TTL > 0 && r.TTL <= time.Hour, err)

	// Optimistic concurrency: write only if the key is still at the version
	// read; KeepTTL keeps its expiry (without it a replace sets TTL anew).
	r, err = c.Put(ctx, "user:42", []byte("Ada Lovelace"), &sdk.PutOptions{IfMatchVersion: r.Version, KeepTTL: true})
	fmt.Println(r.Status, "version", r.Version, err)

	// The same CAS again: the key moved on. The Result says Conflict and the
	// error says why; errors.Is picks the case.
	r, err = c.Put(ctx, "user:42", []byte("Grace"), &sdk.PutOptions{IfMatchVersion: 1})
	fmt.Println(r.Status, errors.Is(err, sdk.ErrConflict))

	// A miss is a status, not an error.
	r, err = c.Get(ctx, "user:7")
	fmt.Println(r.Status, err)
	// Output:
	// Success version 1
	// Ada version 1 ttl ≤ 1h: true <nil>
	// Success version 2 <nil>
	// Conflict true
	// NotFound <nil>
}

// Refused writes carry the reason and the limit (D38).
func Example_errors() {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.MaxItemBytes = 1024 // zaris-server --max-item-bytes 1024
	c, err := sdk.Connect(ctx, "zaris://inproc/errors", sdk.WithEmbeddedConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	r, err := c.Put(ctx, "blob", make([]byte, 2048), nil)
	fmt.Println(r.Status, errors.Is(err, sdk.ErrItemTooLarge))
	fmt.Println(err)

	_, err = c.Put(ctx, "k", []byte("v"), &sdk.PutOptions{TTL: -time.Second})
	fmt.Println(errors.Is(err, sdk.ErrBadRequest))
	// Output:
	// ItemTooLarge true
	// zaris: item too large: value of 2048 bytes exceeds --max-item-bytes 1024
	// true
}
