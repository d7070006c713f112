package netproxy

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// echo starts a server that writes back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Each round trip through the proxy takes at least its delay, and what
// goes through arrives whole and in order, a megabyte included.
func TestLatencyDelaysEveryReply(t *testing.T) {
	const delay = 50 * time.Millisecond
	p, err := StartLatency(echo(t), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < delay {
			t.Errorf("round trip %d took %v, less than the delay %v", i, took, delay)
		}
		if string(got) != "ping" {
			t.Errorf("round trip %d: got %q, want %q", i, got, "ping")
		}
	}
	big := make([]byte, 1<<20)
	rand.Read(big)
	go c.Write(big)
	got := make([]byte, len(big))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Error("a megabyte through the proxy came back changed")
	}
}

// Close ends the connections through the proxy: the client reads EOF or an
// error, not a hang.
func TestLatencyCloseEndsConnections(t *testing.T) {
	p, err := StartLatency(echo(t), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read after Close succeeded, want the connection closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("read after Close hung until the deadline, want the connection closed")
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("the proxy still accepts connections after Close")
	}
}
