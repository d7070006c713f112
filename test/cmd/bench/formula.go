package main

import (
	"fmt"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// The commands a bucket-mode chunk costs when nothing misses: the look-ups
// of what earlier attempts of the chunk stored and parked (with idempotent
// on, the default: a chunk new to the process may be an earlier process's
// resend), then the update commands of its rounds. There are S update
// statements: one per bucket the chunk's records touch (each group's
// current bucket topped up, and every new bucket); round r writes the r-th
// of each group's, so it costs ceil(G_r / write_batch) commands, G_r the
// groups whose records touch r buckets or more. A group the writer has
// never seen, in a collection that holds buckets of it already, costs
// more: its first write misses, the writer reads the group's newest
// bucket, seals its open buckets and looks again. Into a fresh collection
// nothing misses.

// planner computes S chunk by chunk, grouping records as the sink does and
// filling buckets as the writer does, with the state the writer keeps
// between chunks: where each group's open bucket stands.
type planner struct {
	dec        *parser.Decoder
	grouper    bucketer.Config
	maxRecords int
	maxBytes   int
	idempotent bool
	open       map[string]*openBucket // by group id
	rounds     []int                  // of the last chunk planned: G_r by round r
}

// openBucket is a group's bucket being filled.
type openBucket struct{ count, bytes int }

// The writer's own reserves (writer/encode.go and writer/ops.go): a bucket's
// fixed fields take up to headerReserve beside its key, and each write of
// n entries adds ceil(n/opMaxN) op elements of opElemBytes; a write leaves
// room for one op element more.
const (
	headerReserve = 512
	opElemBytes   = 12
	opMaxN        = 15
)

func newPlanner(opt sink.Options) (*planner, error) {
	d := opt.Decoder
	d.MaxRecordBytes = opt.MaxBytes
	dec, err := parser.NewDecoder(d)
	if err != nil {
		return nil, err
	}
	g := opt.Grouper
	g.TagKey, g.ReplaceDot, g.ReplaceDollar = opt.TagKey, d.ReplaceDot, d.ReplaceDollar
	if len(g.Stats)+len(g.CountBy)+len(g.KeepValues) > 0 {
		return nil, fmt.Errorf("the bench's planner does not size stats, count_by or keep_values")
	}
	return &planner{dec: dec, grouper: g, maxRecords: opt.MaxRecords, maxBytes: opt.MaxBytes,
		idempotent: opt.Idempotent, open: map[string]*openBucket{}}, nil
}

// statements returns S for the next chunk of tag and the groups it
// touches, and moves the groups' buckets on as the writer would.
func (p *planner) statements(tag string, chunk []byte) (s, groups int) {
	var batch parser.Batch
	p.dec.Decode(chunk, nil, &batch)
	gs := p.grouper.Group(tag, batch.Records)
	p.rounds = p.rounds[:0]
	for _, g := range gs {
		r := 0
		b := p.open[g.ID]
		if b == nil {
			b = &openBucket{}
			p.open[g.ID] = b
		}
		recs := g.Records
		for len(recs) > 0 {
			room := p.maxBytes - headerReserve - len(g.Key) - b.bytes - opElemBytes
			k := bucketer.Fit(recs, p.maxRecords-b.count, room, 1)
			if k == 0 {
				if b.count == 0 {
					recs = recs[1:] // fits no bucket: parked, not written
					continue
				}
				*b = openBucket{}
				continue
			}
			s++
			if r == len(p.rounds) {
				p.rounds = append(p.rounds, 0)
			}
			p.rounds[r]++
			r++
			b.count += k
			b.bytes += p.grouper.Summarize(recs[:k]).Bytes
			if p.idempotent {
				b.bytes += (k + opMaxN - 1) / opMaxN * opElemBytes
			}
			recs = recs[k:]
		}
	}
	return s, len(gs)
}

// formula is the commands the chunk last planned (of s statements) costs
// when nothing misses.
func (p *planner) formula(s, batch int) int {
	n := 0
	for _, g := range p.rounds {
		n += (g + batch - 1) / batch
	}
	if p.idempotent {
		n += 2
	}
	return n
}
