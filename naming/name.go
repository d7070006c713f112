package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
	"unicode/utf8"
)

// HashDigits is how many hex digits of SHA-256 mark a cut name.
const HashDigits = 16

// headBytes is how much of a name resolve keeps: more than any limit, so
// a name is cut within it.
const headBytes = 256

// Byte maps: what each byte becomes in a name.
var (
	keepAll   = byteMap(func(c byte) bool { return true })                                        // a collection's literal text
	dbLiteral = byteMap(func(c byte) bool { return strings.IndexByte(databaseForbidden, c) < 0 }) // a database's
	safeValue = byteMap(nameByte)                                                                 // a placeholder value
	safeLower = lowered(safeValue)                                                                // a database's value
)

// byteMap maps every byte keep accepts to itself and every other to '_'.
func byteMap(keep func(byte) bool) (m [256]byte) {
	for c := range m {
		m[c] = '_'
		if keep(byte(c)) {
			m[c] = byte(c)
		}
	}
	return m
}

// lowered is m with its upper-case letters lowered.
func lowered(m [256]byte) [256]byte {
	for c, v := range m {
		if 'A' <= v && v <= 'Z' {
			m[c] = v + 'a' - 'A'
		}
	}
	return m
}

// spill is the state of a name beyond the bytes of it kept in its head (a
// []byte of capacity headBytes+1, kept apart so that it can stay on the
// stack): its length, and once it is longer than headBytes a SHA-256 of all
// of it.
type spill struct {
	n          int       // the name's length so far
	sum        hash.Hash // nil while the whole name is in head
	chunk      []byte    // feeds sum
	collection bool      // the name is a collection's: check "system."
}

// add appends s to the name, each byte mapped through m, and returns head.
func add[S string | []byte](head []byte, sp *spill, s S, m *[256]byte) []byte {
	sp.n += len(s)
	if sp.sum == nil {
		n := min(headBytes-len(head), len(s))
		for i := range n {
			head = append(head, m[s[i]])
		}
		if n == len(s) {
			return head
		}
		sp.start(head)
		s = s[n:]
	}
	for len(s) > 0 {
		n := min(len(s), len(sp.chunk))
		for i := range n {
			sp.chunk[i] = m[s[i]]
		}
		sp.sum.Write(sp.chunk[:n])
		s = s[n:]
	}
	return head
}

// start starts the hash of a name that outgrows its head, with head (full
// now) and the '_' finish puts before a collection's "system.".
func (sp *spill) start(head []byte) {
	sp.sum = sha256.New()
	sp.chunk = make([]byte, 4096)
	if system(head, sp.collection) {
		sp.sum.Write([]byte{'_'})
	}
	n := copy(sp.chunk, head)
	sp.sum.Write(sp.chunk[:n])
}

// reservedDatabases are MongoDB's own databases.
var reservedDatabases = []string{"admin", "local", "config"}

// Reserved reports whether db names one of MongoDB's own databases, admin,
// local or config, in any case (MongoDB refuses two databases whose names
// differ only in case). A template may resolve to one: the caller must not
// write there (sink sends such records to the overflow target).
func Reserved(db string) bool {
	for _, r := range reservedDatabases {
		if strings.EqualFold(db, r) {
			return true
		}
	}
	return false
}

// system reports whether name is a collection's starting with "system.",
// which MongoDB reserves.
func system(name []byte, collection bool) bool {
	return collection && strings.HasPrefix(string(name), "system.")
}

// finish is the name, with a '_' before a collection's "system.", and cut
// to limit bytes as Template.Resolve says when longer.
func finish(head []byte, sp *spill, limit int) string {
	name := head
	if system(name, sp.collection) {
		name = append(name, 0)
		copy(name[1:], name)
		name[0] = '_'
	}
	var sum [sha256.Size]byte
	switch {
	case sp.sum != nil:
		sum = sumOf(sp.sum)
	case len(name) <= limit:
		return string(name)
	default:
		sum = sha256.Sum256(name)
	}
	keep := limit - 1 - HashDigits
	for keep > 0 && !utf8.RuneStart(name[keep]) {
		keep--
	}
	name = append(name[:keep], '_')
	return string(hex.AppendEncode(name, sum[:HashDigits/2]))
}

// sumOf is h's sum.
func sumOf(h hash.Hash) (sum [sha256.Size]byte) {
	copy(sum[:], h.Sum(nil))
	return sum
}
