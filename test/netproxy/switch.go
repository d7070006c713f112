package netproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Switch is a TCP proxy that can be turned off and on: Down closes its
// listener and every connection through it, so that a client meets
// "connection refused" at its address, as at a server that stopped; Up
// listens again on the same address. It stands for a server a test stops
// and starts, in front of any server (MONGO_URI's too).
type Switch struct {
	target string
	addr   string

	mu sync.Mutex
	r  *relay // nil while down
}

// StartSwitch listens on 127.0.0.1 and forwards each connection to target
// (host:port).
func StartSwitch(target string) (*Switch, error) {
	s := &Switch{target: target}
	if err := s.up("127.0.0.1:0"); err != nil {
		return nil, err
	}
	s.addr = s.r.Addr()
	return s, nil
}

// Addr is the proxy's host:port, the same while it is down.
func (s *Switch) Addr() string { return s.addr }

func (s *Switch) up(addr string) error {
	r := &relay{}
	if err := r.listenOn(addr, s.target, func(in net.Conn) { forward(r, in) }); err != nil {
		return err
	}
	s.r = r
	return nil
}

// Up listens again, on the same address.
func (s *Switch) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		return errors.New("the switch is up already")
	}
	return s.up(s.addr)
}

// Down stops listening and closes every connection through the proxy.
func (s *Switch) Down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		return nil
	}
	err := s.r.Close()
	s.r = nil
	return err
}

// Close is Down.
func (s *Switch) Close() error { return s.Down() }

// forward copies in to the server and back until either side ends.
func forward(r *relay, in net.Conn) {
	out, ok := r.connect(in)
	if !ok {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
	r.untrack(in, out)
	<-done
}
