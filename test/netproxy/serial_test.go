package netproxy

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// opMsg is an OP_MSG with request id id whose body is cmd, optionally
// followed by a document sequence (as the driver sends an update's
// statements).
func opMsg(t *testing.T, id int32, cmd bson.D, seq bool) []byte {
	t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 20, 64+len(body))
	binary.LittleEndian.PutUint32(msg[4:], uint32(id))
	binary.LittleEndian.PutUint32(msg[12:], 2013)
	msg = append(msg, 0)
	msg = append(msg, body...)
	if seq {
		doc, _ := bson.Marshal(bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}})
		ident := "updates\x00"
		msg = append(msg, 1)
		msg = binary.LittleEndian.AppendUint32(msg, uint32(4+len(ident)+len(doc)))
		msg = append(msg, ident...)
		msg = append(msg, doc...)
	}
	binary.LittleEndian.PutUint32(msg, uint32(len(msg)))
	return msg
}

func TestCommand(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		seq   bool
		write bool
	}{
		{"update", true, true}, {"insert", false, true}, {"delete", true, true}, {"findAndModify", false, true},
		{"find", false, false}, {"hello", false, false}, {"updateSearchIndex", false, false},
	} {
		msg := opMsg(t, 7, bson.D{{Key: c.cmd, Value: "logs"}, {Key: "$db", Value: "d"}}, c.seq)
		if got := Command(msg); got != c.cmd {
			t.Errorf("Command(%s) = %q", c.cmd, got)
		}
		if got := IsWrite(msg); got != c.write {
			t.Errorf("IsWrite(%s) = %v, want %v", c.cmd, got, c.write)
		}
	}
	for _, bad := range [][]byte{nil, make([]byte, 16), make([]byte, 40)} {
		if got := Command(bad); got != "" {
			t.Errorf("Command(% x) = %q, want none", bad, got)
		}
	}
}

// server is a wire server that answers each message with an empty reply
// to its request id; the answer to a write waits until release is called
// for its request id, and a delete closes the connection unanswered.
type server struct {
	addr     string
	mu       sync.Mutex
	arrived  chan int32 // the request id of every message, as it arrives
	releases map[int32]chan struct{}
}

func startServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &server{addr: ln.Addr().String(), arrived: make(chan int32, 100), releases: map[int32]chan struct{}{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					msg, err := readMessage(c)
					if err != nil {
						return
					}
					id := requestID(msg)
					s.arrived <- id
					if Command(msg) == "delete" {
						return
					}
					if IsWrite(msg) {
						<-s.release(id)
					}
					reply := make([]byte, 16)
					binary.LittleEndian.PutUint32(reply, 16)
					binary.LittleEndian.PutUint32(reply[8:], uint32(id))
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *server) release(id int32) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.releases[id] == nil {
		s.releases[id] = make(chan struct{})
	}
	return s.releases[id]
}

// next waits for the next message to arrive and returns its request id.
func (s *server) next(t *testing.T) int32 {
	t.Helper()
	select {
	case id := <-s.arrived:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("no message reached the server")
		return 0
	}
}

// none checks that no message reaches the server for a while.
func (s *server) none(t *testing.T, why string) {
	t.Helper()
	select {
	case id := <-s.arrived:
		t.Fatalf("message %d reached the server: %s", id, why)
	case <-time.After(300 * time.Millisecond):
	}
}

func startSerial(t *testing.T, target string) *Serial {
	t.Helper()
	s, err := StartSerial(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func send(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
}

// A write reaches the server only once the write before it, sent on
// another connection, was answered; a read passes meanwhile; a write whose
// client is gone keeps the turn until the server answered it.
func TestSerialOneWriteAtATime(t *testing.T) {
	srv := startServer(t)
	p := startSerial(t, srv.addr)
	a, b, r := dial(t, p.Addr()), dial(t, p.Addr()), dial(t, p.Addr())
	update := bson.D{{Key: "update", Value: "logs"}}

	send(t, a, opMsg(t, 1, update, true))
	if id := srv.next(t); id != 1 {
		t.Fatalf("first message at the server: %d, want 1", id)
	}
	send(t, b, opMsg(t, 2, bson.D{{Key: "insert", Value: "logs"}}, true))
	srv.none(t, "a write was sent on while another was at the server")
	send(t, r, opMsg(t, 3, bson.D{{Key: "find", Value: "logs"}}, false))
	if id := srv.next(t); id != 3 {
		t.Fatalf("the read: %d reached the server, want 3", id)
	}
	if m, err := readMessage(r); err != nil || responseTo(m) != 3 {
		t.Fatalf("reply to the read: %v", err)
	}
	close(srv.release(1))
	if m, err := readMessage(a); err != nil || responseTo(m) != 1 {
		t.Fatalf("reply to write 1: %v", err)
	}
	if id := srv.next(t); id != 2 {
		t.Fatalf("after write 1 was answered, %d reached the server, want 2", id)
	}

	// Write 2's client goes away: write 4 waits for write 2's answer all the same.
	b.Close()
	send(t, a, opMsg(t, 4, update, true))
	srv.none(t, "a write was sent on while one whose client left was at the server")
	close(srv.release(2))
	if id := srv.next(t); id != 4 {
		t.Fatalf("after write 2 was answered, %d reached the server, want 4", id)
	}
	close(srv.release(4))
	if m, err := readMessage(a); err != nil || responseTo(m) != 4 {
		t.Fatalf("reply to write 4: %v", err)
	}
}

// A write whose server connection ends (the server closes it: a delete,
// here) gives the turn up.
func TestSerialLostConnectionFreesTheTurn(t *testing.T) {
	srv := startServer(t)
	p := startSerial(t, srv.addr)
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	send(t, a, opMsg(t, 1, bson.D{{Key: "delete", Value: "logs"}}, true))
	if id := srv.next(t); id != 1 {
		t.Fatalf("first message at the server: %d, want 1", id)
	}
	send(t, b, opMsg(t, 2, bson.D{{Key: "update", Value: "logs"}}, true))
	if id := srv.next(t); id != 2 {
		t.Fatalf("after write 1's connection ended, %d reached the server, want 2", id)
	}
	if _, err := readMessage(a); err == nil {
		t.Fatal("write 1 answered, want its connection closed")
	}
	close(srv.release(2))
	if m, err := readMessage(b); err != nil || responseTo(m) != 2 {
		t.Fatalf("reply to write 2: %v", err)
	}
}
