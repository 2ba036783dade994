package store

// memberList is a set's members in no particular order (setColl.members):
// a plain slice while it holds at most memberChunk of them, then fixed
// chunks of memberChunk, so that growing never copies the members already
// there — a slice of 700 k members reallocated and copied 11 MiB in the
// SADD that filled it, under the segment's lock (D130).
type memberList struct {
	flat   []string   // the members while chunks is nil
	chunks [][]string // each memberChunk long; member i is chunks[i/memberChunk][i%memberChunk]
	n      int        // members in chunks
}

// memberChunk is the members of one chunk: 8 KiB of string headers.
const memberChunk = 512

func (l *memberList) len() int {
	if l.chunks == nil {
		return len(l.flat)
	}
	return l.n
}

func (l *memberList) at(i int) string {
	if l.chunks == nil {
		return l.flat[i]
	}
	return l.chunks[uint(i)/memberChunk][uint(i)%memberChunk]
}

func (l *memberList) set(i int, m string) {
	if l.chunks == nil {
		l.flat[i] = m
		return
	}
	l.chunks[uint(i)/memberChunk][uint(i)%memberChunk] = m
}

func (l *memberList) push(m string) {
	if l.chunks == nil {
		if len(l.flat) < memberChunk {
			l.flat = append(l.flat, m)
			return
		}
		first := make([]string, memberChunk)
		copy(first, l.flat)
		l.chunks, l.n, l.flat = [][]string{first}, len(l.flat), nil
	}
	if l.n == len(l.chunks)*memberChunk {
		l.chunks = append(l.chunks, make([]string, memberChunk))
	}
	l.chunks[uint(l.n)/memberChunk][uint(l.n)%memberChunk] = m
	l.n++
}

// pop removes the last member. A list that fell to a quarter of a chunk
// goes back to a slice, a slice to a quarter of its room is reallocated:
// a set that shrank does not keep its largest size's memory.
func (l *memberList) pop() {
	if l.chunks == nil {
		last := len(l.flat) - 1
		l.flat[last] = "" // let the member's bytes go
		l.flat = l.flat[:last]
		if cap(l.flat) > 64 && len(l.flat) < cap(l.flat)/4 {
			l.flat = append([]string(nil), l.flat...)
		}
		return
	}
	l.n--
	l.set(l.n, "")
	if l.n%memberChunk == 0 {
		l.chunks[len(l.chunks)-1] = nil
		l.chunks = l.chunks[:len(l.chunks)-1]
	}
	if l.n <= memberChunk/4 {
		l.flat = append(make([]string, 0, 2*l.n), l.chunks[0][:l.n]...)
		l.chunks, l.n = nil, 0
	}
}

// all yields every member, in order.
func (l *memberList) all(yield func(string) bool) {
	if l.chunks == nil {
		for _, m := range l.flat {
			if !yield(m) {
				return
			}
		}
		return
	}
	left := l.n
	for _, c := range l.chunks {
		for _, m := range c[:min(left, memberChunk)] {
			if !yield(m) {
				return
			}
		}
		left -= memberChunk
	}
}

// view is every member as one slice: the list's own while it is a slice
// (not to be changed), a copy once it is in chunks.
func (l *memberList) view() []string {
	if l.chunks == nil {
		return l.flat
	}
	return l.clone()
}

// clone is a copy of every member.
func (l *memberList) clone() []string {
	out := make([]string, 0, l.len())
	for m := range l.all {
		out = append(out, m)
	}
	return out
}
