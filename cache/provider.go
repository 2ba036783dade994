package cache

import (
	"errors"
	"fmt"
	"sync"

	"github.com/zaris-io/zaris/sdk"
)

// Provider errors.
var (
	ErrUnknownCache   = errors.New("cache: no cache registered under that name")
	ErrDuplicateCache = errors.New("cache: a cache is already registered under that name")
	ErrNoDefault      = errors.New("cache: no cache registered")
)

// Provider holds several named caches and a default, like .NET's
// IClustronCacheProvider: the first cache added is the default unless a later
// one is added with setAsDefault. It is safe for concurrent use.
type Provider struct {
	mu     sync.RWMutex // guards caches, names and def
	caches map[string]Cache
	names  []string // in registration order
	def    string
}

// NewProvider returns an empty provider.
func NewProvider() *Provider {
	return &Provider{caches: map[string]Cache{}}
}

// Add registers c under name. The first cache added becomes the default;
// setAsDefault makes this one the default instead.
func (p *Provider) Add(name string, c Cache, setAsDefault bool) error {
	if name == "" || c == nil {
		return fmt.Errorf("cache: provider: a cache needs a name and a value")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.caches[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateCache, name)
	}
	p.caches[name] = c
	p.names = append(p.names, name)
	if setAsDefault || len(p.names) == 1 {
		p.def = name
	}
	return nil
}

// AddClient builds a DistributedCache over client with opts and registers
// it under name (see Add).
func (p *Provider) AddClient(name string, client *sdk.Client, opts Options, setAsDefault bool) (*DistributedCache, error) {
	c := New(client, opts)
	if err := p.Add(name, c, setAsDefault); err != nil {
		return nil, err
	}
	return c, nil
}

// Cache returns the cache registered under name.
func (p *Provider) Cache(name string) (Cache, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, ok := p.caches[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownCache, name)
	}
	return c, nil
}

// Default returns the default cache.
func (p *Provider) Default() (Cache, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.def == "" {
		return nil, ErrNoDefault
	}
	return p.caches[p.def], nil
}

// DefaultName returns the name of the default cache ("" when empty).
func (p *Provider) DefaultName() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.def
}

// Names lists the registered caches in registration order.
func (p *Provider) Names() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]string(nil), p.names...)
}
