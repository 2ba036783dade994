// Package panics describes a recovered panic for a log line without
// leaking request data: the front ends contain a panic at the request
// boundary and log what failed, never the values the request carried.
package panics

import (
	"fmt"
	"runtime"
)

// Describe returns the text of a runtime error (an index out of range, a
// nil dereference: it names positions and types, not data) and only the
// type of any other panic value (which may embed a key or a value).
func Describe(v any) string {
	if err, ok := v.(runtime.Error); ok {
		return err.Error()
	}
	return fmt.Sprintf("panic value of type %T", v)
}
