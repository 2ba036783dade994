package sdk

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// inprocRegistry shares embedded stores by name within the process. It is
// the one deliberate process-wide state of the SDK: "same name, same store"
// is the contract of zaris://inproc/<name> (R-SDK-5). A store lives while at
// least one Client of its name is open.
var inprocRegistry = struct {
	sync.Mutex
	stores map[string]*inprocStore
}{stores: map[string]*inprocStore{}}

type inprocStore struct {
	name  string
	store *store.Store
	refs  int // guarded by inprocRegistry
}

func openInproc(name string, cfg *store.Config) (*inprocStore, error) {
	inprocRegistry.Lock()
	defer inprocRegistry.Unlock()
	if s := inprocRegistry.stores[name]; s != nil {
		s.refs++
		return s, nil
	}
	c := store.DefaultConfig()
	if cfg != nil {
		c = *cfg
	}
	st, err := store.New(c)
	if err != nil {
		return nil, fmt.Errorf("zaris: embedded store %q: %w", name, err)
	}
	s := &inprocStore{name: name, store: st, refs: 1}
	inprocRegistry.stores[name] = s
	return s, nil
}

func (s *inprocStore) release() {
	inprocRegistry.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		delete(inprocRegistry.stores, s.name)
	}
	inprocRegistry.Unlock()
	if last {
		_ = s.store.Close()
	}
}

// embeddedBackend runs operations on the in-process store engine. Values are
// copied at the boundary, because a caller must be free to reuse or modify
// its slices: Put copies what it is given into the record; what the engine
// returns it shares, so reads copy it out.
type embeddedBackend struct {
	shared    *inprocStore
	st        *store.Store
	closeOnce sync.Once
}

func newEmbeddedBackend(name string, cfg *store.Config) (*embeddedBackend, error) {
	s, err := openInproc(name, cfg)
	if err != nil {
		return nil, err
	}
	return &embeddedBackend{shared: s, st: s.store}, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func copyOut(r Result) Result {
	r.Value = cloneBytes(r.Value)
	return r
}

func (b *embeddedBackend) get(ctx context.Context, key string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return copyOut(resultOf(b.st.Get(key))), nil
}

func (b *embeddedBackend) put(ctx context.Context, key string, value []byte, opts *PutOptions) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return b.putOwned(key, value, opts), nil
}

// putOwned writes value (the engine copies it into the record: the caller
// may reuse it).
func (b *embeddedBackend) putOwned(key string, value []byte, opts *PutOptions) Result {
	if len(value) > b.st.Config().MaxItemBytes {
		return tooLarge(len(value), fmt.Sprintf("--max-item-bytes %d", b.st.Config().MaxItemBytes))
	}
	return resultOf(b.st.Put(key, value, opts.kv()))
}

func (b *embeddedBackend) delete(ctx context.Context, key string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return resultOf(b.st.Delete(key)), nil
}

func (b *embeddedBackend) expire(ctx context.Context, key string, ttl time.Duration) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return resultOf(b.st.Expire(key, ttl)), nil
}

func (b *embeddedBackend) persist(ctx context.Context, key string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return resultOf(b.st.Persist(key)), nil
}

func (b *embeddedBackend) timeToLive(ctx context.Context, key string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return resultOf(b.st.TimeToLive(key)), nil
}

func (b *embeddedBackend) batch(ctx context.Context, items []BatchItem) ([]ItemResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]ItemResult, len(items))
	for i, it := range items {
		out[i] = ItemResult{Index: i, Op: it.Op, Key: it.Key}
		switch it.Op {
		case BatchGet:
			out[i].Result = copyOut(resultOf(b.st.Get(it.Key)))
		case BatchPut:
			out[i].Result = b.putOwned(it.Key, it.Value, it.Options)
		case BatchDelete:
			out[i].Result = resultOf(b.st.Delete(it.Key))
		default:
			out[i].Result = Result{Status: StatusBadRequest}
		}
	}
	return out, nil
}

func (b *embeddedBackend) close() error {
	b.closeOnce.Do(b.shared.release)
	return nil
}

func (b *embeddedBackend) exec(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	if err := ctx.Err(); err != nil {
		return kv.Reply{}, err
	}
	return copyReply(b.st.Exec(cmd)), nil
}

// copyReply deep-copies the byte strings of a reply: the engine's replies
// share the collection's memory.
func copyReply(r kv.Reply) kv.Reply {
	r.Bulk = cloneBytes(r.Bulk)
	if r.Array != nil {
		a := make([]kv.Reply, len(r.Array))
		for i := range r.Array {
			a[i] = copyReply(r.Array[i])
		}
		r.Array = a
	}
	return r
}
