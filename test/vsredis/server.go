package vsredis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Server is one server process under measurement: redis-server or
// zaris-server, started by this package on loopback ports the kernel chose.
type Server struct {
	// Name is "redis" or "zaris".
	Name string
	// RESPAddr is the RESP listener; NativeAddr the Zaris native one ("" for Redis).
	RESPAddr, NativeAddr string

	cmd     *exec.Cmd
	log     *syncBuffer
	exited  chan struct{}
	waitErr error
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop kills the process and waits for it. Safe to call twice.
func (s *Server) Stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Alive returns an error when the process has exited.
func (s *Server) Alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited (%v); its output ends with:\n%s", s.Name, s.waitErr, tail(s.log.String(), 2000))
	default:
		return nil
	}
}

func start(name, bin string, args []string) (*Server, error) {
	s := &Server{Name: name, log: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	return s, nil
}

// StartRedis starts redis-server without persistence on a free loopback port
// and waits until it answers PING.
func StartRedis(bin string, deadline time.Duration) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s, err := start("redis", bin, []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"})
	if err != nil {
		return nil, err
	}
	s.RESPAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	until := time.Now().Add(deadline)
	for {
		if err := s.Alive(); err != nil {
			return nil, err
		}
		if err := ping(s.RESPAddr); err == nil {
			return s, nil
		} else if time.Now().After(until) {
			s.Stop()
			return nil, fmt.Errorf("redis-server did not answer PING on %s within %v: %w", s.RESPAddr, deadline, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a synchronisation
	}
}

// zarisReady is the JSON log line a node writes when its client ports are open.
type zarisReady struct {
	Msg        string `json:"msg"`
	ClientAddr string `json:"client_addr"`
	RESPAddr   string `json:"resp_addr"`
}

// StartZaris starts a single zaris-server node with every port chosen by the
// kernel and waits for its "node ready" log line, which carries the native
// and RESP addresses. extra flags are appended (e.g. --memory-max-bytes).
func StartZaris(bin string, deadline time.Duration, extra ...string) (*Server, error) {
	args := append([]string{"--client-port", "-1", "--resp-port", "-1", "--peer-port", "-1",
		"--gossip-port", "-1", "--http-port", "-1", "--log-format", "json", "--node-id", "bench"}, extra...)
	s, err := start("zaris", bin, args)
	if err != nil {
		return nil, err
	}
	var ready zarisReady
	err = s.awaitLine(deadline, func(line []byte) bool {
		var r zarisReady
		if json.Unmarshal(line, &r) == nil && r.Msg == "node ready" && r.RESPAddr != "" && r.ClientAddr != "" {
			ready = r
			return true
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("zaris-server: %w", err)
	}
	s.RESPAddr, s.NativeAddr = ready.RESPAddr, ready.ClientAddr
	if err := ping(s.RESPAddr); err != nil {
		s.Stop()
		return nil, fmt.Errorf("zaris-server ready but its RESP port %s does not answer: %w", s.RESPAddr, err)
	}
	return s, nil
}

// awaitLine polls the process's output until found accepts a line. The
// process is stopped when it does not print one within deadline.
func (s *Server) awaitLine(deadline time.Duration, found func(line []byte) bool) error {
	until := time.Now().Add(deadline)
	for {
		if err := s.Alive(); err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(s.log.Bytes()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if found(sc.Bytes()) {
				return nil
			}
		}
		if time.Now().After(until) {
			s.Stop()
			return fmt.Errorf("not ready within %v; output:\n%s", deadline, tail(s.log.String(), 2000))
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a synchronisation
	}
}

// ping sends one RESP PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Command sends one RESP command and returns the first line of the reply
// (enough for integers and status replies such as DBSIZE's).
func Command(ctx context.Context, addr string, args ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(b.Bytes()); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) > 0 && line[0] == '-' {
		return "", errors.New(line[1 : len(line)-2])
	}
	return line[:len(line)-2], nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// syncBuffer is a bytes.Buffer safe for a process's writer and a reader.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Keep the start (the ready line) and bound the rest: a long run's log
	// must not grow without limit.
	if s.b.Len() > 4<<20 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *syncBuffer) String() string { return string(s.Bytes()) }
