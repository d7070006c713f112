package netproxy

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"
)

// Serial is a TCP proxy that lets one write command at a time reach the
// server, over all its connections: a write (insert, update, delete,
// findAndModify) waits until the write before it was answered, or its
// connection was lost, before it is sent on. Everything else (and a write
// that asks for no reply) passes through at once.
//
// It goes in front of the in-process FerretDB v1 in tests with several
// writers on one document: that server loses concurrent updates of one
// document (of two updates guarded by one field's value, both are reported
// applied and one is gone), where MongoDB applies each update to its
// document atomically. Each write command then runs alone: more than
// MongoDB gives (it interleaves the statements of two commands), and the
// plugin relies only on the atomic update of one document.
type Serial struct {
	relay
	turn chan struct{} // holds a token while a write is at the server
}

// replyWait bounds how long a write keeps the turn waiting for its reply:
// far longer than any write of a test takes.
const replyWait = 60 * time.Second

// StartSerial listens on 127.0.0.1 and forwards each connection to target
// (host:port).
func StartSerial(target string) (*Serial, error) {
	s := &Serial{turn: make(chan struct{}, 1)}
	if err := s.listen(target, s.pipe); err != nil {
		return nil, err
	}
	return s, nil
}

// pipe forwards one connection. The driver sends a command and reads its
// reply before it sends the next on that connection, so a write that took
// the turn keeps it until the reply to it comes back (or the server's side
// of the connection ends), and only then is the client read again.
func (s *Serial) pipe(in net.Conn) {
	out, ok := s.connect(in)
	if !ok {
		return
	}
	defer s.untrack(in, out)
	var (
		pending atomic.Int64 // the request id of the write waiting for its reply, or -1
		replied = make(chan struct{}, 1)
		ended   = make(chan struct{}) // the server's side is gone
	)
	pending.Store(-1)
	go func() {
		defer close(ended)
		defer s.untrack(in, out)
		for {
			msg, err := readMessage(out)
			if err != nil {
				return
			}
			if pending.CompareAndSwap(int64(responseTo(msg)), -1) {
				select {
				case replied <- struct{}{}:
				default:
				}
			}
			_, _ = in.Write(msg) // a client gone still has its write answered first
		}
	}()
	for {
		msg, err := readMessage(in)
		if err != nil {
			return
		}
		if !IsWrite(msg) || moreToCome(msg) {
			if _, err := out.Write(msg); err != nil {
				return
			}
			continue
		}
		select {
		case s.turn <- struct{}{}:
		case <-s.done:
			return
		case <-ended:
			return
		}
		select {
		case <-replied: // the late reply to a write that gave up waiting
		default:
		}
		pending.Store(int64(requestID(msg)))
		_, err = out.Write(msg)
		if err == nil {
			select {
			case <-replied:
			case <-ended:
			case <-s.done:
			case <-time.After(replyWait):
			}
		}
		pending.Store(-1)
		<-s.turn
		if err != nil {
			return
		}
	}
}

// writeCommands are the commands that change documents.
var writeCommands = []string{"insert", "update", "delete", "findAndModify"}

// IsWrite reports whether msg (a whole wire message, header included) is
// an OP_MSG whose command is a write: insert, update, delete or
// findAndModify.
func IsWrite(msg []byte) bool {
	name := Command(msg)
	for _, c := range writeCommands {
		if name == c {
			return true
		}
	}
	return false
}

// Command is the name of the command msg carries: the first key of an
// OP_MSG's body; "" for any other message.
func Command(msg []byte) string {
	const opMsg = 2013
	if len(msg) < 21 || binary.LittleEndian.Uint32(msg[12:]) != opMsg {
		return ""
	}
	for p := 20; p < len(msg); {
		kind := msg[p]
		if p+5 > len(msg) {
			return ""
		}
		size := int(binary.LittleEndian.Uint32(msg[p+1:]))
		if kind == 1 { // a document sequence: size, identifier, documents
			p += 1 + size
			continue
		}
		if kind != 0 || size < 5 || p+1+size > len(msg) {
			return ""
		}
		doc := msg[p+1 : p+1+size]
		// doc: size, then the first element: its type and its name.
		if doc[4] == 0 {
			return ""
		}
		name := doc[5:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			return string(name[:i])
		}
		return ""
	}
	return ""
}

func requestID(msg []byte) int32  { return int32(binary.LittleEndian.Uint32(msg[4:])) }
func responseTo(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[8:])) }

// moreToCome reports an OP_MSG that expects no reply (its flag bit 1).
func moreToCome(msg []byte) bool {
	return len(msg) >= 20 && binary.LittleEndian.Uint32(msg[12:]) == 2013 && binary.LittleEndian.Uint32(msg[16:])&2 != 0
}
