package store

// InjectFault installs fn, called with the key of every client write (Put
// and write commands) under the key's segment write lock, just before the
// write applies; nil removes it. It exists for the containment tests of the
// front ends: a fn that panics stands for a bug met while serving one
// request, and the tests check that the request's connection alone pays for
// it (the lock is released, nothing is half-applied, the node serves on).
// Never set outside tests.
func (s *Store) InjectFault(fn func(key string)) {
	if fn == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&fn)
}

// faultLocked runs the injected fault, if any (one atomic load otherwise).
func (s *Store) faultLocked(key string) {
	if fn := s.fault.Load(); fn != nil {
		(*fn)(key)
	}
}
