package store

import (
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// effectSlab hands out the op-log entries of small collection effects
// (up to two arguments, effectInline bytes) from chunks it reuses: every
// collection write logged one allocation of its own (a 208-byte
// loggedEffect), most of what an LPUSH or HSET allocated, and the
// collections that followed (issue #17). The op-log trims in the order it
// appends, so slots are freed in the order they were handed out: a FIFO of
// chunks, the oldest freed as its last slot is.
//
// A slot is reused once its entry is trimmed; nothing may keep a pointer
// into it past the segment's lock (the op-log's readers copy: after,
// logEntry.detached).
type effectSlab struct {
	chunks [][]loggedEffect2Small // oldest first
	head   int                    // slots of chunks[0] freed
	tail   int                    // slots of the last chunk handed out
	spare  []loggedEffect2Small   // a freed chunk kept for the next one
}

// slabChunk is the slots of a chunk: 32 × 224 bytes.
const slabChunk = 32

func (s *effectSlab) get() *loggedEffect2Small {
	if len(s.chunks) == 0 || s.tail == slabChunk {
		c := s.spare
		s.spare = nil
		if c == nil {
			c = make([]loggedEffect2Small, slabChunk)
		}
		s.chunks = append(s.chunks, c)
		s.tail = 0
	}
	slot := &s.chunks[len(s.chunks)-1][s.tail]
	s.tail++
	return slot
}

// release frees the oldest slot handed out, which must be the one whose
// header is at hdr, and clears it (a freed slot must not keep the keys it
// named alive).
func (s *effectSlab) release(hdr *Record) {
	slot := &s.chunks[0][s.head]
	if unsafe.Pointer(&slot.hdr) != unsafe.Pointer(hdr) {
		panic("store: op-log effect released out of order")
	}
	*slot = loggedEffect2Small{}
	s.head++
	switch {
	case len(s.chunks) == 1 && s.head == s.tail:
		s.head, s.tail = 0, 0 // empty: the one chunk starts over
	case s.head == slabChunk:
		if s.spare == nil {
			s.spare = s.chunks[0]
		}
		s.chunks[0] = nil
		s.chunks = s.chunks[1:]
		s.head = 0
	}
}

// releaseAll frees every slot (the op-log was emptied).
func (s *effectSlab) releaseAll() {
	for _, c := range s.chunks {
		clear(c)
	}
	if len(s.chunks) > 0 && s.spare == nil {
		s.spare = s.chunks[0]
	}
	clear(s.chunks)
	s.chunks, s.head, s.tail = s.chunks[:0], 0, 0
}

// fill makes the slot the logged form of effect on rec: rec's header and a
// copy of the command, its arguments in the slot's inline bytes (size of
// them, at most effectInline; at most two arguments).
func (slot *loggedEffect2Small) fill(rec *Record, effect *kv.Cmd, size int) {
	rec.headerInto(&slot.hdr)
	// The key is the record's: the command's key may alias a network buffer.
	// Field by field: a kv.Cmd literal is built on the stack and copied
	// whole, and the copy's wide loads wait for its narrow stores.
	slot.cmd.Op, slot.cmd.Key, slot.cmd.Out = effect.Op, rec.Key(), nil
	slot.cmd.Args = slot.args[:len(effect.Args):len(effect.Args)]
	copyArgs(slot.cmd.Args, slot.data[:0:size], effect.Args)
}
