package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Hold is a TCP proxy that reads what the client sends as MongoDB wire
// messages and, while armed, swallows the messages a predicate picks: it
// keeps the first one, sends nothing of it on, and cuts that connection,
// so that the client learns no outcome (a write in doubt); later matches
// are dropped the same way (the driver's own retry included). Release
// delivers the kept message late, on a connection of its own, as a network
// that held it would. Everything else passes through.
type Hold struct {
	relay

	mu   sync.Mutex            // guards pick and held
	pick func(msg []byte) bool // nil: disarmed
	held [][]byte
}

// StartHold listens on 127.0.0.1 and forwards each connection to target
// (host:port).
func StartHold(target string) (*Hold, error) {
	h := &Hold{}
	if err := h.listen(target, h.pipe); err != nil {
		return nil, err
	}
	return h, nil
}

// Arm makes the proxy swallow the messages pick reports true for (whole
// messages, header included).
func (h *Hold) Arm(pick func(msg []byte) bool) {
	h.mu.Lock()
	h.pick = pick
	h.mu.Unlock()
}

// Disarm lets every message through again; what is held stays held.
func (h *Hold) Disarm() { h.Arm(nil) }

// Held is how many messages are held.
func (h *Hold) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// Release delivers the messages swallowed, in the order they came, to the
// server (the clients that sent them are gone), each waiting for its
// reply, and forgets them.
func (h *Hold) Release() error {
	h.mu.Lock()
	msgs := h.held
	h.held = nil
	h.mu.Unlock()
	if len(msgs) == 0 {
		return errors.New("no message held")
	}
	c, err := h.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	for _, msg := range msgs {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if _, err := readMessage(c); err != nil {
			return err
		}
	}
	return nil
}

func (h *Hold) pipe(in net.Conn) {
	out, ok := h.connect(in)
	if !ok {
		return
	}
	defer h.untrack(in, out)
	go func() { _, _ = io.Copy(in, out); h.untrack(in, out) }()
	for {
		msg, err := readMessage(in)
		if err != nil {
			return
		}
		h.mu.Lock()
		swallow := h.pick != nil && h.pick(msg)
		if swallow {
			h.held = append(h.held, msg)
		}
		h.mu.Unlock()
		if swallow {
			return // the connection is cut: the client learns nothing
		}
		if _, err := out.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one wire message: its length (int32, little-endian,
// header included) and the rest.
func readMessage(r io.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(head[:]))
	if n < 16 || n > 64<<20 {
		return nil, fmt.Errorf("wire message of %d bytes", n)
	}
	msg := make([]byte, n)
	copy(msg, head[:])
	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}
	return msg, nil
}
