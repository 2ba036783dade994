package respdiff

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// side is one server's connection.
type side struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
}

func dial(addr string, timeout time.Duration) (*side, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &side{nc: nc, r: bufio.NewReaderSize(nc, 1<<16)}, nil
}

func (s *side) send(timeout time.Duration, cmds ...[]string) error {
	s.buf = s.buf[:0]
	for _, c := range cmds {
		s.buf = Encode(s.buf, c)
	}
	_ = s.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := s.nc.Write(s.buf)
	return err
}

func (s *side) recv(timeout time.Duration) (Value, error) {
	_ = s.nc.SetReadDeadline(time.Now().Add(timeout))
	return Read(s.r)
}

// Mismatch is one command whose replies differ, with the sequence (from a
// flushed key space, on a fresh connection) that leads to it.
type Mismatch struct {
	Proto int
	Seq   [][]string // the last one is the command that differs
	Redis Value
	Zaris Value
	Why   string
	Dead  bool // the Zaris connection or node stopped answering
}

func (m *Mismatch) last() []string { return m.Seq[len(m.Seq)-1] }

// Signature groups mismatches of one cause: command, why, error codes.
func (m *Mismatch) Signature() string {
	last := m.Seq[len(m.Seq)-1]
	return strings.ToUpper(last[0]) + " " + m.Why + " " + m.Redis.ErrCode() + "/" + m.Zaris.ErrCode()
}

// Row renders the mismatch as a row of the regression table
// (server/resp/diff_regress_test.go).
func (m *Mismatch) Row() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{proto: %d, seq: [][]string{", m.Proto)
	for i, c := range m.Seq {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('{')
		for j, a := range c {
			if j > 0 {
				b.WriteString(", ")
			}
			if len(a) > 64 && strings.Count(a, a[:1]) == len(a) {
				fmt.Fprintf(&b, "strings.Repeat(%q, %d)", a[:1], len(a))
			} else {
				b.WriteString(strconv.Quote(a))
			}
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, "}}, // redis: %s | zaris: %s", clip(m.Redis.String()), clip(m.Zaris.String()))
	return b.String()
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Session runs commands on both servers in lock step.
type Session struct {
	Proto     int
	Timeout   time.Duration
	redisAddr string // for probeStaleErrno's fresh connection
	redis     *side
	zaris     *side
	queued    [][]string // commands queued since MULTI
	inMulti   bool
	// trimmed are the keys of the approximate trims queued since MULTI
	// (see probeTrims).
	trimmed []string
	// Accepted lists the allowlisted differences met; Diverged is set when
	// one of them may have left the key spaces different.
	Accepted []*Accepted
	Diverged bool
}

// Open connects to both servers, flushes both key spaces and switches to
// the protocol.
func Open(redisAddr, zarisAddr string, proto int, timeout time.Duration) (*Session, error) {
	s := &Session{Proto: proto, Timeout: timeout, redisAddr: redisAddr}
	var err error
	if s.redis, err = dial(redisAddr, timeout); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if s.zaris, err = dial(zarisAddr, timeout); err != nil {
		s.redis.nc.Close()
		return nil, fmt.Errorf("zaris: %w", err)
	}
	setup := [][]string{{"FLUSHALL"}}
	if proto == 3 {
		setup = append(setup, []string{"HELLO", "3"})
	}
	for _, c := range setup {
		for _, sd := range []*side{s.redis, s.zaris} {
			if err := sd.send(timeout, c); err != nil {
				s.Close()
				return nil, err
			}
			if v, err := sd.recv(timeout); err != nil || v.IsError() {
				s.Close()
				return nil, fmt.Errorf("%q: %v %v", c, v, err)
			}
		}
	}
	return s, nil
}

// Close closes both connections.
func (s *Session) Close() {
	s.redis.nc.Close()
	s.zaris.nc.Close()
}

// ErrRedisDown means the oracle itself stopped answering: the run is void.
var ErrRedisDown = errors.New("redis-server stopped answering")

var ping = []string{"PING"}

// Step runs cmd on both servers, each followed by a PING (liveness), and
// compares the replies. A nil Mismatch means they agree.
func (s *Session) Step(cmd []string) (*Mismatch, error) {
	var race *expiryRace
	if !s.inMulti {
		var err error
		if race, err = s.probeExpiryRace(cmd); err != nil {
			return nil, err
		}
	}
	if err := s.redis.send(s.Timeout, cmd, ping); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRedisDown, err)
	}
	zerr := s.zaris.send(s.Timeout, cmd, ping)
	rv, err := s.redis.recv(s.Timeout)
	var rping Value
	if err == nil {
		rping, err = s.redis.recv(s.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrRedisDown, cmd, err)
	}
	dead := func(why string, err error) *Mismatch {
		return &Mismatch{Proto: s.Proto, Seq: [][]string{cmd}, Redis: rv, Zaris: Value{Kind: '-', Str: fmt.Sprint(err)}, Why: why, Dead: true}
	}
	if zerr != nil {
		return dead("zaris write", zerr), nil
	}
	zv, err := s.zaris.recv(s.Timeout)
	if err != nil {
		return dead("no reply", err), nil
	}
	if pv, err := s.zaris.recv(s.Timeout); err != nil {
		return dead("no reply to PING", err), nil
	} else if pv.IsError() {
		return dead("PING refused", errors.New(pv.Str)), nil
	}
	if zv.IsError() && strings.HasPrefix(zv.Str, "ERR internal error") {
		return &Mismatch{Proto: s.Proto, Seq: [][]string{cmd}, Redis: rv, Zaris: zv, Why: "panic", Dead: true}, nil
	}
	ok, why, acc := s.compare(cmd, rv, zv)
	if !ok && race.explains(rv, zv, time.Now().UnixMilli()) {
		ok, acc = true, ExpiryRace
	}
	if !ok && !s.inMulti {
		stale, err := s.probeStaleErrno(cmd, rv, zv)
		if err != nil {
			return nil, err
		}
		if stale {
			ok, acc = true, StaleErrno
		}
	}
	if s.inMulti && rping.Kind == '+' && rping.Str == "QUEUED" {
		s.queued = append(s.queued, ping) // the liveness PING is queued too: EXEC answers it
	}
	if !ok {
		return &Mismatch{Proto: s.Proto, Seq: [][]string{cmd}, Redis: rv, Zaris: zv, Why: why}, nil
	}
	if acc != nil {
		s.Accepted = append(s.Accepted, acc)
		if acc.Diverges {
			s.Diverged = true
		}
	}
	if err := s.realign(cmd, rv, zv); err != nil {
		return nil, err
	}
	if err := s.probeSortStore(cmd, rv); err != nil {
		return nil, err
	}
	return s.probeTrims(cmd, rv)
}

// probeSortStore follows a SORT … BY … ALPHA … STORE (see the accepted
// difference "SORT … BY … ALPHA … STORE of tied elements"): both stored
// the same count; both servers are asked for the destination list, and
// when the lists differ only as tied elements may — as many elements, the
// same ones unless LIMIT picked a page — the difference is counted and
// the episode ends, the key spaces having parted.
func (s *Session) probeSortStore(cmd []string, rv Value) error {
	ok, alpha, by, limit, _, _, dest := sortOptions(cmd)
	if !ok || !alpha || !by || dest == "" || rv.Kind != ':' {
		return nil
	}
	var lists [2]Value
	for i, sd := range []*side{s.redis, s.zaris} {
		if err := sd.send(s.Timeout, []string{"LRANGE", dest, "0", "-1"}); err != nil {
			return err
		}
		v, err := sd.recv(s.Timeout)
		if err != nil {
			return err
		}
		lists[i] = v
	}
	if eq, _, _ := Compare([]string{"LRANGE", dest, "0", "-1"}, lists[0], lists[1]); eq {
		return nil
	}
	if len(lists[0].Elems) == len(lists[1].Elems) && (limit || sameElements(lists[0], lists[1])) {
		s.Accepted = append(s.Accepted, sortTiesAccepted)
		s.Diverged = true
	}
	return nil
}

// StaleErrno is a SORT that Redis refuses for the errno an earlier command
// left (probeStaleErrno).
var StaleErrno = &Accepted{
	Name: "SORT after a number that overflowed",
	Reason: "Redis 7.0's SORT tests errno == ERANGE after strtod without clearing errno first, so after a command " +
		"whose number overflowed (a GEORADIUS radius of 1e309, say) it refuses valid numbers with 'One or more " +
		"scores can't be converted into double' until a system call fails. Accepted when the same SORT, sent " +
		"to redis-server on a new connection (whose accept loop ends in EAGAIN, resetting errno), answers what " +
		"Zaris answered; that re-run also stores what Zaris stored, so the key spaces stay equal.",
	Match: func([]string, Value, Value) bool { return false }, // probed in Step
}

// probeStaleErrno follows a SORT that redis-server refused with the
// conversion error where Zaris answered: it sends the same command to
// redis-server on a new connection and reports whether that answer matches
// Zaris's (see StaleErrno).
func (s *Session) probeStaleErrno(cmd []string, rv, zv Value) (bool, error) {
	name := strings.ToLower(cmd[0])
	if name != "sort" && name != "sort_ro" || rv.Str != "ERR One or more scores can't be converted into double" || zv.IsError() {
		return false, nil
	}
	fresh, err := dial(s.redisAddr, s.Timeout)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrRedisDown, err)
	}
	defer fresh.nc.Close()
	var cmds [][]string
	if s.Proto == 3 {
		cmds = append(cmds, []string{"HELLO", "3"})
	}
	cmds = append(cmds, cmd)
	if err := fresh.send(s.Timeout, cmds...); err != nil {
		return false, fmt.Errorf("%w: %v", ErrRedisDown, err)
	}
	var v Value
	for range cmds {
		if v, err = fresh.recv(s.Timeout); err != nil {
			return false, fmt.Errorf("%w: %v", ErrRedisDown, err)
		}
	}
	same, _, _ := Compare(cmd, v, zv)
	return same, nil
}

// probeTrims follows the approximate trims ('~', which remove the whole
// nodes Redis would, D119): an XADD trims without a word in its reply, so
// after one — or after the EXEC that ran it — both servers are asked XLEN
// of its key, and different lengths are a mismatch.
func (s *Session) probeTrims(cmd []string, rv Value) (*Mismatch, error) {
	var keys []string
	switch name := strings.ToLower(cmd[0]); {
	case rv.Kind == '+' && rv.Str == "QUEUED":
		if approxTrim(cmd) {
			s.trimmed = append(s.trimmed, cmd[1])
		}
		return nil, nil
	case name == "exec" || name == "discard":
		keys, s.trimmed = s.trimmed, nil
		if name == "discard" || rv.IsError() {
			return nil, nil
		}
	case approxTrim(cmd) && !rv.IsError():
		keys = []string{cmd[1]}
	}
	for _, k := range keys {
		var lens [2]Value
		for i, sd := range []*side{s.redis, s.zaris} {
			if err := sd.send(s.Timeout, []string{"XLEN", k}); err != nil {
				return nil, err
			}
			v, err := sd.recv(s.Timeout)
			if err != nil {
				return nil, err
			}
			lens[i] = v
		}
		// Compared as any reply, so an accepted difference (an empty key)
		// stays accepted.
		if ok, why, _ := Compare([]string{"XLEN", k}, lens[0], lens[1]); !ok {
			return &Mismatch{Proto: s.Proto, Seq: [][]string{cmd, {"XLEN", k}}, Redis: lens[0], Zaris: lens[1],
				Why: "XLEN after a '~' trim: " + why}, nil
		}
	}
	return nil, nil
}

// ExpiryRace is the one difference let through by the servers' state
// rather than by their replies (so it is not in Allowlist): a relative
// EXPIRE or PEXPIRE with GT or LT whose new instant — the server's clock
// plus the time — falls on the key's current expiry, to within the
// milliseconds the command took. Both servers compare the two instants in
// whole milliseconds, so each answers by the millisecond its clock read:
// redis-server and Zaris may both be right and differ. Session.Step asks
// both servers for the key's PEXPIRETIME first and lets a 0 against a 1
// through only when each server's expiry lies in that window (an absolute
// EXPIREAT/PEXPIREAT, or a relative time away from the expiry, is compared
// as any reply).
var ExpiryRace = &Accepted{
	Name: "relative EXPIRE GT/LT on the current expiry's millisecond",
	Reason: "the new instant is the server's clock plus the time; on the millisecond of the current expiry, " +
		"GT and LT answer by which millisecond each server's clock read",
	Diverges: true, // the two expiries may now differ by a millisecond
	Match:    func([]string, Value, Value) bool { return false },
}

// expiryRace is what Step learned before a relative EXPIRE/PEXPIRE with
// GT or LT: each server's current expiry and the command's time.
type expiryRace struct {
	redisAt, zarisAt int64 // PEXPIRETIME before the command
	ms               int64 // the relative time in milliseconds
	sent             int64 // the local clock (Unix ms) when the command was sent
}

// raceSlack covers the distance between the local clock and each server's
// (Zaris's store clock runs on the monotonic clock from its start).
const raceSlack = 2

// probeExpiryRace asks both servers for the key's PEXPIRETIME when cmd is
// a relative EXPIRE or PEXPIRE with GT or LT on a key with an expiry; nil
// otherwise.
func (s *Session) probeExpiryRace(cmd []string) (*expiryRace, error) {
	name := strings.ToLower(cmd[0])
	if (name != "expire" && name != "pexpire") || len(cmd) < 4 {
		return nil, nil
	}
	cond := false
	for _, a := range cmd[3:] {
		cond = cond || strings.EqualFold(a, "GT") || strings.EqualFold(a, "LT")
	}
	n, err := strconv.ParseInt(cmd[2], 10, 64)
	if !cond || err != nil || strconv.FormatInt(n, 10) != cmd[2] {
		return nil, nil
	}
	if name == "expire" {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return nil, nil
		}
		n *= 1000
	}
	at := func(sd *side, down error) (int64, error) {
		if err := sd.send(s.Timeout, []string{"PEXPIRETIME", cmd[1]}); err != nil {
			return 0, fmt.Errorf("%w: %v", down, err)
		}
		v, err := sd.recv(s.Timeout)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", down, err)
		}
		if v.Kind != ':' {
			return -1, nil
		}
		return strconv.ParseInt(v.Str, 10, 64)
	}
	r := &expiryRace{ms: n}
	if r.redisAt, err = at(s.redis, ErrRedisDown); err != nil {
		return nil, err
	}
	if r.zarisAt, err = at(s.zaris, errZarisProbe); err != nil {
		return nil, nil // a dead Zaris is found by the command itself
	}
	if r.redisAt < 0 || r.zarisAt < 0 {
		return nil, nil // no key or no expiry: GT and LT do not depend on the clock
	}
	r.sent = time.Now().UnixMilli()
	return r, nil
}

var errZarisProbe = errors.New("zaris: PEXPIRETIME probe")

// explains reports whether replies 0 and 1 (either way round) are the
// clock's doing: each server's current expiry lies where its new instant
// fell, between sending the command and reading the replies (done).
func (r *expiryRace) explains(rv, zv Value, done int64) bool {
	if r == nil || rv.Kind != ':' || zv.Kind != ':' || rv.Str == zv.Str ||
		(rv.Str != "0" && rv.Str != "1") || (zv.Str != "0" && zv.Str != "1") {
		return false
	}
	if r.ms > math.MaxInt64-done-raceSlack {
		return false
	}
	lo, hi := r.sent+r.ms-raceSlack, done+r.ms+raceSlack
	return r.redisAt >= lo && r.redisAt <= hi && r.zarisAt >= lo && r.zarisAt <= hi
}

// compare follows the transaction: a queued command is compared when EXEC
// answers it, by its own class.
func (s *Session) compare(cmd []string, rv, zv Value) (bool, string, *Accepted) {
	name := strings.ToLower(cmd[0])
	switch {
	case s.inMulti && name == "exec" && rv.Kind == '*' && zv.Kind == '*' && len(rv.Elems) == len(s.queued) && len(zv.Elems) == len(rv.Elems):
		q := s.queued
		s.inMulti, s.queued = false, nil
		for i := range rv.Elems {
			ok, why, acc := Compare(q[i], rv.Elems[i], zv.Elems[i])
			if !ok {
				return false, "in EXEC: " + strings.ToUpper(q[i][0]) + " " + why, nil
			}
			if acc != nil {
				return true, "", acc
			}
		}
		return true, "", nil
	case s.inMulti && (name == "exec" || name == "discard") && !rv.IsError(),
		s.inMulti && name == "exec" && strings.HasPrefix(rv.Str, "EXECABORT"): // EXECABORT discards the transaction
		s.inMulti, s.queued = false, nil
	case s.inMulti && rv.Kind == '+' && rv.Str == "QUEUED":
		s.queued = append(s.queued, cmd)
	case name == "multi" && !rv.IsError():
		s.inMulti, s.queued = true, nil
	}
	return Compare(cmd, rv, zv)
}

// realign makes a random mutation (SPOP) resolve on Zaris as it did on
// Redis, so the two key spaces stay equal: put back what Zaris popped, take
// out what Redis popped.
func (s *Session) realign(cmd []string, rv, zv Value) error {
	if !strings.EqualFold(cmd[0], "spop") || len(cmd) < 2 || rv.IsError() || zv.IsError() ||
		rv.Kind == '+' && rv.Str == "QUEUED" { // queued: realigning would queue SADD/SREM into Zaris's transaction
		return nil
	}
	popped := func(v Value) []string {
		if v.Null {
			return nil
		}
		if len(v.Elems) == 0 && (v.Kind == '$' || v.Kind == '+') {
			return []string{v.Str}
		}
		var out []string
		for _, e := range v.Elems {
			out = append(out, e.Str)
		}
		return out
	}
	rp, zp := popped(rv), popped(zv)
	if len(zp) == 0 && len(rp) == 0 {
		return nil
	}
	fix := [][]string{append([]string{"SADD", cmd[1]}, zp...), append([]string{"SREM", cmd[1]}, rp...)}
	if len(zp) == 0 {
		fix = fix[1:]
	}
	for _, c := range fix {
		if err := s.zaris.send(s.Timeout, c); err != nil {
			return err
		}
		if _, err := s.zaris.recv(s.Timeout); err != nil {
			return err
		}
	}
	return nil
}

// Replay runs seq on a fresh session and returns the first mismatch (its
// Seq is the prefix of seq up to it).
func Replay(redisAddr, zarisAddr string, proto int, timeout time.Duration, seq [][]string) (*Mismatch, error) {
	s, err := Open(redisAddr, zarisAddr, proto, timeout)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	for i, c := range seq {
		m, err := s.Step(c)
		if err != nil {
			return nil, err
		}
		if m != nil {
			m.Seq = append([][]string(nil), seq[:i+1]...)
			return m, nil
		}
		if s.Diverged {
			return nil, nil
		}
	}
	return nil, nil
}

// Minimize shrinks a confirmed mismatch by delta debugging: the shortest
// subsequence found, within budget replays, whose replay still ends in a
// mismatch of the same signature at its last command.
func Minimize(redisAddr, zarisAddr string, timeout time.Duration, m *Mismatch, budget int) *Mismatch {
	sig := m.Signature()
	last := m.Seq[len(m.Seq)-1]
	best := m
	test := func(prefix [][]string) *Mismatch {
		if budget <= 0 {
			return nil
		}
		budget--
		seq := append(append([][]string(nil), prefix...), last)
		got, err := Replay(redisAddr, zarisAddr, m.Proto, timeout, seq)
		if err != nil || got == nil || len(got.Seq) != len(seq) || got.Signature() != sig {
			return nil
		}
		return got
	}
	if got := test(nil); got != nil {
		return got
	}
	prefix := m.Seq[:len(m.Seq)-1]
	n := 2
	for len(prefix) >= 1 && budget > 0 {
		chunk := (len(prefix) + n - 1) / n
		reduced := false
		for start := 0; start < len(prefix); start += chunk {
			end := min(start+chunk, len(prefix))
			complement := append(append([][]string(nil), prefix[:start]...), prefix[end:]...)
			if got := test(complement); got != nil {
				prefix, best, reduced = complement, got, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(n*2, len(prefix))
		}
	}
	return best
}
