package netproxy

import (
	"net"
	"sync"
	"time"
)

// relay is what every proxy here shares: the listener, the server it
// forwards to, and the connections Close closes. Each proxy gives it a
// pipe, run for every connection accepted.
type relay struct {
	ln     net.Listener
	target string
	done   chan struct{} // closed by Close

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// listen listens on 127.0.0.1 and runs pipe for each connection accepted,
// to be forwarded to target (host:port).
func (r *relay) listen(target string, pipe func(in net.Conn)) error {
	return r.listenOn("127.0.0.1:0", target, pipe)
}

// listenOn is listen on addr.
func (r *relay) listenOn(addr, target string, pipe func(in net.Conn)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	r.ln, r.target, r.done, r.conns = ln, target, make(chan struct{}), map[net.Conn]bool{}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				pipe(in)
			}()
		}
	}()
	return nil
}

// Addr is the proxy's host:port.
func (r *relay) Addr() string { return r.ln.Addr().String() }

// Close stops listening, closes every connection through the proxy and
// waits for its goroutines to end.
func (r *relay) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	close(r.done)
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// dial opens a connection to the server.
func (r *relay) dial() (net.Conn, error) { return net.DialTimeout("tcp", r.target, 5*time.Second) }

// connect opens the server's side of in and tracks both; false (both
// closed) when the server cannot be reached or the proxy is closed.
func (r *relay) connect(in net.Conn) (out net.Conn, ok bool) {
	out, err := r.dial()
	if err != nil {
		in.Close()
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		in.Close()
		out.Close()
		return nil, false
	default:
	}
	r.conns[in], r.conns[out] = true, true
	return out, true
}

// untrack closes cs and forgets them.
func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
		c.Close()
	}
}
