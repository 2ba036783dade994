package hybrid

import (
	"errors"
	"fmt"
)

var (
	// ErrFactoryPanic is wrapped by the *PanicError a call returns when its
	// factory panicked. The panic never escapes to the caller and never
	// wedges the key's single flight.
	ErrFactoryPanic = errors.New("hybrid: factory panicked")
	// ErrFactoryTimeout: the factory did not answer within
	// Options.FactoryHardTimeout and no fail-safe value was available.
	ErrFactoryTimeout = errors.New("hybrid: factory timed out")
	// ErrInvalidKey: Set with a key the cache does not store (empty, longer
	// than Options.MaxKeyLength, or holding an ASCII control character).
	ErrInvalidKey = errors.New("hybrid: invalid key")
	// ErrClosed is returned by every call on a closed Cache.
	ErrClosed = errors.New("hybrid: cache closed")
)

// PanicError carries a factory's panic value and stack. errors.Is(err,
// ErrFactoryPanic) holds.
type PanicError struct {
	Key   string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("hybrid: factory for %q panicked: %v", e.Key, e.Value)
}

func (e *PanicError) Unwrap() error { return ErrFactoryPanic }
