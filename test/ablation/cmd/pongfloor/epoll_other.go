//go:build !linux

package main

import (
	"errors"
	"net"
)

func serveEpoll(*net.TCPListener, int) error {
	return errors.New("-io epoll needs Linux")
}
