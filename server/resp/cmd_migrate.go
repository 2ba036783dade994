package resp

import (
	"bufio"
	"errors"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/rdb"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password | AUTH2 username password] [KEYS key …]: each key is
// DUMPed here, sent to the target as RESTORE key ttl payload [REPLACE] and,
// unless COPY, deleted here once the target accepted it — as Redis does,
// with one difference: Redis blocks the whole server while it talks to the
// target, a Zaris node goes on serving, so a key written again between its
// DUMP and its delete is kept here (the target got the older value; the
// newer one is not lost).

func init() {
	register(&command{name: "migrate", arity: -6, flags: flagWrite | flagMovableKeys, first: 3, last: 3, step: 1,
		group: "generic", since: "2.6.0", keys: migrateKeys,
		summary: "Moves keys to another server (Redis or Zaris) with DUMP and RESTORE; a key written again while it moves stays here.",
		run:     cmdMigrate})
}

// migrateKeys are MIGRATE's keys: argument 3, or those after KEYS when it
// is the empty string (AUTH's and AUTH2's values are skipped: a password
// may well be "keys").
func migrateKeys(args [][]byte) []int {
	if len(args) < 6 {
		return nil
	}
	for j := 6; j < len(args); j++ {
		switch {
		case eq(args[j], "AUTH"):
			j++
		case eq(args[j], "AUTH2"):
			j += 2
		case eq(args[j], "KEYS") && len(args[3]) == 0:
			out := make([]int, 0, len(args)-j-1)
			for k := j + 1; k < len(args); k++ {
				out = append(out, k)
			}
			return out
		}
	}
	return []int{3}
}

// migrateOptions is a parsed MIGRATE.
type migrateOptions struct {
	addr          string
	db, timeout   int64
	copy, replace bool
	auth          [][]byte // AUTH's or AUTH2's arguments
	keys          [][]byte
}

func parseMigrate(c *conn, args [][]byte) (migrateOptions, bool) {
	o := migrateOptions{addr: net.JoinHostPort(string(args[1]), string(args[2]))}
	keysAt := 0
	for j := 6; j < len(args) && keysAt == 0; j++ {
		more := len(args) - j - 1
		switch {
		case eq(args[j], "COPY"):
			o.copy = true
		case eq(args[j], "REPLACE"):
			o.replace = true
		case eq(args[j], "AUTH") && more >= 1:
			o.auth = args[j+1 : j+2]
			j++
		case eq(args[j], "AUTH2") && more >= 2:
			o.auth = args[j+1 : j+3]
			j += 2
		case eq(args[j], "KEYS"):
			if len(args[3]) != 0 {
				c.err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return o, false
			}
			keysAt = j + 1
		default:
			c.err(msgSyntax)
			return o, false
		}
	}
	var ok bool
	if o.timeout, ok = parseInt(args[5]); !ok {
		c.err(msgNotInteger)
		return o, false
	}
	if o.db, ok = parseInt(args[4]); !ok {
		c.err(msgNotInteger)
		return o, false
	}
	if o.timeout <= 0 {
		o.timeout = 1000
	}
	if keysAt > 0 {
		o.keys = args[keysAt:]
	} else {
		o.keys = args[3:4]
	}
	return o, true
}

// migrated is one key read for MIGRATE.
type migrated struct {
	key      []byte
	payload  []byte
	ttlMs    int64
	revision uint64 // the record's: the write that made the value sent
	sent     bool   // the target accepted it
}

func cmdMigrate(c *conn, args [][]byte) {
	o, ok := parseMigrate(c, args)
	if !ok {
		return
	}
	if c.tx != nil {
		// Inside MULTI/EXEC or a script the segments stay locked: no
		// waiting on another server under them.
		c.err("ERR MIGRATE is not allowed in a transaction or a script")
		return
	}
	var items []migrated
	for _, key := range o.keys {
		failed := false
		c.atomically(false, [][]byte{key}, func() {
			v, exists, res := c.tx.Dump(string(key))
			if res.Status != kv.StatusSuccess {
				c.setCurKey(key)
				c.storeError(res.Status, res.Detail)
				failed = true
				return
			}
			if !exists {
				return
			}
			ttl := c.tx.TimeToLive(string(key)).TTL
			_, rev := c.tx.Version(string(key))
			ms := int64(0)
			if ttl > 0 {
				ms = max(ttl.Milliseconds(), 1)
			}
			items = append(items, migrated{key: key, payload: rdb.Dump(v), ttlMs: ms, revision: rev})
		})
		if failed {
			return
		}
	}
	if len(items) == 0 {
		c.out.Simple("NOKEY")
		return
	}
	if ioErr, targetErr := sendMigration(o, items); ioErr != "" {
		c.err("IOERR " + ioErr)
		return
	} else if targetErr != "" {
		c.deleteMigrated(o, items)
		c.err("ERR Target instance replied with error: " + targetErr)
		return
	}
	c.deleteMigrated(o, items)
	c.out.OK()
}

// deleteMigrated deletes the keys migratedAway says are gone.
func (c *conn) deleteMigrated(o migrateOptions, items []migrated) {
	for _, it := range items {
		if o.copy || !it.sent {
			continue
		}
		c.atomically(true, [][]byte{it.key}, func() {
			if _, rev := c.tx.Version(string(it.key)); migratedAway(o.copy, it.sent, it.revision, rev) {
				c.tx.Delete(string(it.key))
			}
		})
	}
}

// migratedAway is MIGRATE's rule for deleting a key here: the target
// accepted its RESTORE, COPY was not asked, and the key's record is still
// the one that was sent (read is the record's revision when DUMP read it,
// now its revision at the delete, 0 when the key is gone; a revision names
// one write of its segment). A key written again while its copy travelled
// would otherwise be deleted with a write acknowledged to another client
// that the target never got.
func migratedAway(copy, sent bool, read, now uint64) bool {
	return !copy && sent && now != 0 && now == read
}

// sendMigration talks to the target: AUTH, SELECT, one RESTORE per key,
// then reads every reply. ioErr is Redis's IOERR text when the connection
// failed; targetErr the first error the target answered.
func sendMigration(o migrateOptions, items []migrated) (ioErr, targetErr string) {
	timeout := time.Duration(min(o.timeout, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	nc, err := net.DialTimeout("tcp", o.addr, timeout)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return "error or timeout connecting to the client", ""
		}
		// Redis's non-blocking connect reports a refused or unanswered
		// connection at its first write.
		return "error or timeout writing to target instance", ""
	}
	defer nc.Close()
	var out []byte
	replies := 0
	if len(o.auth) > 0 {
		out = appendCommand(out, append([][]byte{[]byte("AUTH")}, o.auth...)...)
		replies++
	}
	out = appendCommand(out, []byte("SELECT"), strconv.AppendInt(nil, o.db, 10))
	replies++
	for _, it := range items {
		cmd := [][]byte{[]byte("RESTORE"), it.key, strconv.AppendInt(nil, it.ttlMs, 10), it.payload}
		if o.replace {
			cmd = append(cmd, []byte("REPLACE"))
		}
		out = appendCommand(out, cmd...)
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(out); err != nil {
		return "error or timeout writing to target instance", ""
	}
	r := bufio.NewReader(nc)
	for i := 0; i < replies+len(items); i++ {
		_ = nc.SetReadDeadline(time.Now().Add(timeout))
		line, err := r.ReadString('\n')
		if err != nil {
			return "error or timeout reading to target instance", ""
		}
		line = trimCRLF(line)
		switch {
		case len(line) > 0 && line[0] == '-':
			if targetErr == "" {
				targetErr = line[1:]
			}
			if i < replies && len(o.auth) > 0 {
				return "", targetErr // refused AUTH: the RESTOREs were not run
			}
		case len(line) > 0 && line[0] == '+':
			if i >= replies {
				items[i-replies].sent = true
			}
		default:
			return "error or timeout reading to target instance", ""
		}
	}
	return "", targetErr
}

// appendCommand appends a command as a client sends it: an array of bulk
// strings (the reply Writer's encoding is the same).
func appendCommand(b []byte, args ...[]byte) []byte {
	w := Writer{B: b}
	w.Array(len(args))
	for _, a := range args {
		w.Bulk(a)
	}
	return w.B
}

func trimCRLF(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
