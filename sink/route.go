package sink

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// route splits records by the collection they go to, in order of first
// appearance: their target (see Targets), or the time partition of it.
// With partition_keep, records older than the kept range (at the time of
// the flush) are parked instead: their partition is dropped, or about to
// be.
//
// parts is nil when every record goes to the one collection: all holds
// them then (see part).
func (s *Sink) route(f *flush) (colls []string, parts [][]*parser.Record) {
	recs := f.batch.Records
	p := s.opt.Partitions
	if p.Period == layout.None {
		switch {
		case f.dests == nil:
			return []string{s.opt.Collection}, nil
		case f.dests.at != nil:
			return f.dests.split(recs)
		case len(f.dests.table) == 0:
			return nil, nil
		}
		return []string{f.dests.table[0].coll}, nil
	}
	oldest := p.Oldest(s.opt.Now())
	at := map[string]int{}
	for i := range recs {
		r := &recs[i]
		c := s.opt.Collection
		if f.dests != nil {
			c = f.dests.of(i).coll
		}
		p.Base = c
		if r.Time.Before(oldest) {
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: fmt.Sprintf(
				"older than the partitions kept: partition_keep %d keeps %s and later", p.Keep, p.Collection(oldest))})
			continue
		}
		c = p.Collection(r.Time)
		j, ok := at[c]
		if !ok {
			j = len(colls)
			at[c] = j
			colls = append(colls, c)
			parts = append(parts, nil)
		}
		parts[j] = append(parts[j], r)
	}
	return colls, parts
}

// split sends each record to its destination's collection: one per
// distinct name of the table (two destinations may share a name), in
// order of first appearance.
func (r *routes) split(recs []parser.Record) (colls []string, parts [][]*parser.Record) {
	slot := make([]int, len(r.table)) // the index in colls of each destination's
	at := make(map[string]int, len(r.table))
	for k, d := range r.table {
		j, ok := at[d.coll]
		if !ok {
			j = len(colls)
			at[d.coll] = j
			colls = append(colls, d.coll)
			parts = append(parts, nil)
		}
		slot[k] = j
	}
	size := make([]int, len(colls))
	for i := range recs {
		size[slot[r.at[i]]]++
	}
	for j := range parts {
		parts[j] = make([]*parser.Record, 0, size[j])
	}
	for i := range recs {
		j := slot[r.at[i]]
		parts[j] = append(parts[j], &recs[i])
	}
	return colls, parts
}

// part is the records route sends to its j-th collection.
func part(b *parser.Batch, parts [][]*parser.Record, j int) []*parser.Record {
	if parts != nil {
		return parts[j]
	}
	all := make([]*parser.Record, len(b.Records))
	for i := range b.Records {
		all[i] = &b.Records[i]
	}
	return all
}

// dests resolves where each record of b goes, when targets are templates
// (nil otherwise), and reports the records sent to an overflow target.
func (s *Sink) dests(tag string, b *parser.Batch, res *Result) *routes {
	if s.router == nil {
		return nil
	}
	dests, over, reserved := s.router.dests(tag, b)
	if !res.New {
		return dests
	}
	res.Overflowed = over
	if n, dbs, where := s.router.reservedSent(reserved, dests, s.opt.Now()); n > 0 {
		s.log.Warnf("%d records went to an overflow target since the last report (%s): their own database would be %s, which MongoDB keeps for itself "+
			"(the plugin never writes to admin, local or config; their record placeholders are replaced by target_overflow %q)",
			n, strings.Join(where, ", "), strings.Join(dbs, ", "), s.opt.Targets.Overflow)
	}
	if n, where := s.router.overflowed(over-reserved, dests, s.opt.Now()); n > 0 {
		s.log.Warnf("%d records went to an overflow target since the last report (%s): their own target would be a new one beyond target_limit %d "+
			"(their record placeholders are replaced by target_overflow %q); raise target_limit, or template fewer distinct values",
			n, strings.Join(where, ", "), s.opt.Targets.Limit, s.opt.Targets.Overflow)
	}
	return dests
}

// deadLetterOf gives the dead-letter collection of a letter of f; byIndex
// holds the positions in f.batch.Records by record index (nil: built
// here).
func (s *Sink) deadLetterOf(f *flush, byIndex map[int]int) func(l *letter) string {
	if s.router == nil {
		return func(*letter) string { return s.opt.DeadLetter }
	}
	if byIndex == nil {
		byIndex = make(map[int]int, len(f.batch.Records))
		for i := range f.batch.Records {
			byIndex[f.batch.Records[i].Index] = i
		}
	}
	return func(l *letter) string {
		if i, ok := byIndex[l.index]; ok && l.index >= 0 {
			r := &f.batch.Records[i]
			return s.router.deadLetter(f.tag, bson.Raw(r.Doc), f.dests.of(i))
		}
		return s.router.deadLetter(f.tag, nil, s.router.resolve(f.tag, nil))
	}
}
