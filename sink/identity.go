package sink

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// A chunk's content is its agent, tag and bytes. Fluent Bit resends a chunk's
// identical bytes after FLB_RETRY and never resends one answered FLB_OK, but
// two different chunks can hold identical bytes (a line repeated within the
// resolution of its time). So what a flush stores is named by the content
// and its occurrence, the generation: the n-th time this process answers
// FLB_OK for a content, it has stored generation n-1, and the next flush of
// that content writes generation n. A flush of a content whose last answer
// was FLB_RETRY is that generation's resend: it completes what the earlier
// attempts stored. A content this process does not know (the first of it
// since the start) is a resend of whatever an earlier process stored of it:
// the newest generation found in MongoDB, or generation 0 when none is.

// ChunkID names a chunk's content as agent wrote it: a hash of the agent,
// the tag and the bytes, 24 hex digits. Another agent's chunk of the same
// bytes is another content.
func ChunkID(agent, tag string, chunk []byte) string {
	h := sha256.New()
	h.Write([]byte(agent))
	h.Write([]byte{0})
	h.Write([]byte(tag))
	h.Write([]byte{0})
	h.Write(chunk)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// GenID names generation gen of the content id: id itself for generation 0,
// a hash of both after it. Bucket op tags, flat document ids and dead-letter
// ids derive from it.
func GenID(id string, gen int) string {
	if gen == 0 {
		return id
	}
	h := sha256.Sum256([]byte(id + "#" + strconv.Itoa(gen)))
	return hex.EncodeToString(h[:12])
}

// maxContents bounds the contents remembered. A chunk identical to one
// acknowledged carries the same record times, and a new chunk is made of
// records read now, so the contents that can still come again are those
// with the newest record times: when full, the quarter with the oldest are
// forgotten, but never one whose last answer was Retry. A forgotten
// content goes into a filter of forgotten contents (see forgotten): met
// again, it is a new chunk, never the resend of one this process answered
// Done for.
const maxContents = 1 << 15

// occurrence is what this process knows of one content.
type occurrence struct {
	gen     int  // the generation its next flush writes
	retried bool // the last flush of gen ended in Retry: the next is its resend
	// probing: gen was reached by looking for the newest generation stored,
	// a look that is not finished.
	probing bool
	newest  int64 // the newest record time, in ms: the order of forgetting
}

// contents remembers occurrences by content id, at most max of them, and
// which it forgot.
type contents struct {
	mu        sync.Mutex
	max       int
	by        map[string]occurrence
	forgotten forgotten
}

func newContents(max int) *contents { return &contents{max: max, by: map[string]occurrence{}} }

// get returns what is known of content id; ok is false for a content not
// known.
func (c *contents) get(id string) (occurrence, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.by[id]
	return o, ok
}

// put records what the last flush of content id learnt.
func (c *contents) put(id string, o occurrence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.by[id]; !ok && len(c.by) >= c.max {
		c.forgetOldest()
	}
	c.by[id] = o
}

// forgetOldest drops the quarter of the contents with the oldest record
// times, never one whose last flush ended in Retry: its next flush is a
// resend, whose earlier attempts' writes are fenced only when known (see
// writer.Buckets.Write). Called with c.mu held.
func (c *contents) forgetOldest() {
	times := make([]int64, 0, len(c.by))
	for _, o := range c.by {
		if !o.retried {
			times = append(times, o.newest)
		}
	}
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	cut := times[len(times)/4]
	for id, o := range c.by {
		if o.newest <= cut && !o.retried {
			delete(c.by, id)
			c.forgotten.add(id)
		}
	}
}

// forgot reports whether content id may be one forgotten (see forgotten).
func (c *contents) forgot(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forgotten.mayHold(id)
}

// forgotten is a Bloom filter of the contents forgotten, 1 MiB when the
// first is added: a content this process answered Done for and forgot is
// always found in it; one it never saw is found by mistake with a chance
// that grows with the contents forgotten (about 2% after a million).
// Mistaken, the first flush after a restart of a content an earlier process
// was writing stores it again, as a new chunk: never a loss.
type forgotten struct{ bits []uint64 }

const (
	forgottenBits   = 1 << 23
	forgottenHashes = 4
)

func (f *forgotten) add(id string) {
	if f.bits == nil {
		f.bits = make([]uint64, forgottenBits/64)
	}
	for _, b := range forgottenAt(id) {
		f.bits[b/64] |= 1 << (b % 64)
	}
}

func (f *forgotten) mayHold(id string) bool {
	if f.bits == nil {
		return false
	}
	for _, b := range forgottenAt(id) {
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// forgottenAt is the bits of content id (a hash already: its hex digits
// give the bits by double hashing).
func forgottenAt(id string) [forgottenHashes]uint64 {
	raw, _ := hex.DecodeString(id)
	var h1, h2 uint64
	for i, b := range raw {
		if i < 8 {
			h1 = h1<<8 | uint64(b)
		} else {
			h2 = h2<<8 | uint64(b)
		}
	}
	var out [forgottenHashes]uint64
	for i := range out {
		out[i] = (h1 + uint64(i)*(h2|1)) % forgottenBits
	}
	return out
}

func (c *contents) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}

// newestTime is the newest record time of a batch, in ms.
func newestTime(b *parser.Batch) int64 {
	n := int64(math.MinInt64)
	for i := range b.Records {
		n = max(n, b.Records[i].Time.UnixMilli())
	}
	for i := range b.Bad {
		if !b.Bad[i].Time.IsZero() {
			n = max(n, b.Bad[i].Time.UnixMilli())
		}
	}
	return n
}
