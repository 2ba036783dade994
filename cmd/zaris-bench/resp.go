package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// respConn is a minimal RESP2 client: GET and SET, pipelined in batches.
// RESP answers in request order, so the i-th reply is the i-th request's.
type respConn struct {
	conn    net.Conn
	br      *bufio.Reader
	timeout time.Duration
	value   []byte
	buf     []byte // the batch being written; reused
}

// respReadBuffer is the reply buffer size: many pipelined small replies
// parse from one read.
const respReadBuffer = 64 << 10

func newRESPConn(conn net.Conn, cfg *Config, value []byte, deadline time.Time) (*respConn, error) {
	c := &respConn{
		conn:    conn,
		br:      bufio.NewReaderSize(conn, respReadBuffer),
		timeout: cfg.Timeout,
		value:   value,
	}
	addr := conn.RemoteAddr()
	_ = conn.SetDeadline(deadline)
	// AUTH when a token is given, otherwise PING: either way the first
	// reply proves the peer speaks RESP before any load is sent.
	var cmd []byte
	if cfg.Token != "" {
		cmd = appendCommand(nil, []byte("AUTH"), []byte(cfg.Token))
	} else {
		cmd = appendCommand(nil, []byte("PING"))
	}
	if _, err := conn.Write(cmd); err != nil {
		return nil, fmt.Errorf("writing to %s: %w", addr, err)
	}
	rep, err := readReply(c.br)
	if err != nil {
		return nil, fmt.Errorf("no RESP reply from %s (is it a RESP port? try --protocol native for Zaris native): %w", addr, err)
	}
	if rep.kind == '-' {
		if cfg.Token != "" {
			return nil, fmt.Errorf("%w by %s: AUTH failed (check --token): %s", ErrHandshakeRejected, addr, rep.line)
		}
		// NOAUTH and the like: the server wants credentials.
		return nil, fmt.Errorf("%w by %s: PING refused (does the server need --token?): %s", ErrHandshakeRejected, addr, rep.line)
	}
	return c, nil
}

// appendCommand appends a RESP array of bulk strings.
func appendCommand(dst []byte, args ...[]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = appendBulk(dst, a)
	}
	return dst
}

func appendBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

func (c *respConn) roundTrip(reqs []request, res []response) error {
	buf := c.buf[:0]
	for _, r := range reqs {
		if r.kind == opGet {
			buf = append(buf, "*2\r\n$3\r\nGET\r\n"...)
			buf = appendBulk(buf, r.key)
		} else {
			buf = append(buf, "*3\r\n$3\r\nSET\r\n"...)
			buf = appendBulk(buf, r.key)
			buf = appendBulk(buf, c.value)
		}
	}
	c.buf = buf

	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	start := time.Now()
	if _, err := c.conn.Write(buf); err != nil {
		return fmt.Errorf("writing requests: %w", err)
	}
	for i, r := range reqs {
		rep, err := readReply(c.br)
		if err != nil {
			return fmt.Errorf("reading replies (%d of %d outstanding): %w", len(reqs)-i, len(reqs), err)
		}
		res[i] = response{latency: time.Since(start)}
		res[i].outcome, res[i].errMsg = classifyRESP(r.kind, rep)
	}
	return nil
}

// classifyRESP turns one reply into an outcome: GET expects a bulk string
// (hit) or a null (miss), SET expects +OK.
func classifyRESP(kind opKind, rep reply) (outcome, string) {
	switch {
	case rep.kind == '-':
		return outError, string(rep.line)
	case kind == opGet && rep.kind == '$' && rep.null:
		return outMiss, ""
	case kind == opGet && rep.kind == '$':
		return outHit, ""
	case kind == opSet && rep.kind == '+' && string(rep.line) == "OK":
		return outOK, ""
	}
	return outError, fmt.Sprintf("%v: unexpected reply type %q", kind, rep.kind)
}

func (c *respConn) Close() error {
	err := c.conn.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ---------------------------------------------------------------- parser

// reply is one parsed RESP2 reply. Bulk contents and array elements are
// skipped: the benchmark needs only the kind of reply.
type reply struct {
	kind byte   // '+', '-', ':', '$' or '*'
	line []byte // the text of a simple string, error or integer; valid until the next read
	n    int64  // bulk length or array length
	null bool   // $-1 or *-1
}

// Limits of the parser: a reply this tool did not ask for must not make it
// allocate or recurse without bound.
const (
	maxBulkLen    = 512 << 20 // Redis's proto-max-bulk-len default
	maxArrayDepth = 8
)

var errProtocol = errors.New("RESP protocol error")

// readReply reads one complete reply from br.
func readReply(br *bufio.Reader) (reply, error) { return readReplyDepth(br, 0) }

func readReplyDepth(br *bufio.Reader, depth int) (reply, error) {
	line, err := readLine(br)
	if err != nil {
		return reply{}, err
	}
	if len(line) == 0 {
		return reply{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	rep := reply{kind: line[0], line: line[1:]}
	switch rep.kind {
	case '+', '-':
		return rep, nil
	case ':':
		if _, err := strconv.ParseInt(string(rep.line), 10, 64); err != nil {
			return reply{}, fmt.Errorf("%w: bad integer %q", errProtocol, rep.line)
		}
		return rep, nil
	case '$', '*':
	default:
		return reply{}, fmt.Errorf("%w: unknown reply type %q", errProtocol, rep.kind)
	}
	n, err := strconv.ParseInt(string(rep.line), 10, 64)
	if err != nil || n < -1 {
		return reply{}, fmt.Errorf("%w: bad length %q", errProtocol, rep.line)
	}
	rep.n, rep.line = n, nil
	if n == -1 {
		rep.null = true
		return rep, nil
	}
	if rep.kind == '$' {
		if n > maxBulkLen {
			return reply{}, fmt.Errorf("%w: bulk length %d above %d", errProtocol, n, maxBulkLen)
		}
		if _, err := br.Discard(int(n)); err != nil {
			return reply{}, unexpectedEOF(err)
		}
		crlf, err := readLine(br)
		if err != nil {
			return reply{}, err
		}
		if len(crlf) != 0 {
			return reply{}, fmt.Errorf("%w: bulk string longer than its length %d", errProtocol, n)
		}
		return rep, nil
	}
	if depth >= maxArrayDepth {
		return reply{}, fmt.Errorf("%w: arrays nested deeper than %d", errProtocol, maxArrayDepth)
	}
	for range n {
		if _, err := readReplyDepth(br, depth+1); err != nil {
			return reply{}, err
		}
	}
	return rep, nil
}

// readLine returns the next CRLF-terminated line without its CRLF; it
// aliases br's buffer.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, br.Size())
		}
		return nil, unexpectedEOF(err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not terminated by CRLF: %q", errProtocol, bytes.TrimSpace(line))
	}
	return line[:len(line)-2], nil
}

// unexpectedEOF turns an EOF inside a reply into io.ErrUnexpectedEOF: the
// server hung up mid-reply or before answering.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
