// Package netproxy holds TCP proxies that stand between a client and a
// MongoDB-wire server in tests and benchmarks. They listen on 127.0.0.1
// only.
package netproxy

import (
	"io"
	"net"
	"time"
)

// Latency is a TCP proxy that delays what the server sends: every read of
// the server-to-client direction is forwarded Delay after it was read, so
// that a command's round trip costs about Delay more, as to a server
// Delay away. Replies keep their order, and what follows a delayed read
// is read on meanwhile (the link's bandwidth is not cut, only its latency
// raised). What the client sends is forwarded at once.
type Latency struct {
	Delay time.Duration
	relay
}

// StartLatency listens on 127.0.0.1 and forwards each connection to
// target (host:port) with delay added to every server reply.
func StartLatency(target string, delay time.Duration) (*Latency, error) {
	l := &Latency{Delay: delay}
	if err := l.listen(target, l.pipe); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Latency) pipe(in net.Conn) {
	out, ok := l.connect(in)
	if !ok {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(out, in); done <- struct{}{} }()
	go func() { l.delayed(in, out); done <- struct{}{} }()
	<-done
	l.untrack(in, out)
	<-done
}

// burst is one read of the server's side and when it is due at the client.
type burst struct {
	data []byte
	due  time.Time
}

// delayed copies from server to client, each read Delay after it was made.
func (l *Latency) delayed(client, server net.Conn) {
	// The queue holds the reads in flight; when full, reading waits, as a
	// link whose window is full does.
	queue := make(chan burst, 256)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 64<<10)
			n, err := server.Read(buf)
			if n > 0 {
				queue <- burst{data: buf[:n], due: time.Now().Add(l.Delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for b := range queue {
		time.Sleep(time.Until(b.due))
		if _, err := client.Write(b.data); err != nil {
			server.Close()
			for range queue {
			}
			return
		}
	}
}
