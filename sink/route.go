package sink

import (
	"fmt"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// route splits records by the collection they go to, in order of first
// appearance. With partition_keep, records older than the kept range (at
// the time of the flush) are parked instead: their partition is dropped,
// or about to be.
func (s *Sink) route(f *flush) (colls []string, parts [][]parser.Record) {
	recs := f.batch.Records
	p := s.opt.Partitions
	if p.Period == layout.None {
		return []string{s.opt.Collection}, [][]parser.Record{recs}
	}
	p.Base = s.opt.Collection
	oldest := p.Oldest(s.opt.Now())
	at := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Time.Before(oldest) {
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: fmt.Sprintf(
				"older than the partitions kept: partition_keep %d keeps %s and later", p.Keep, p.Collection(oldest))})
			continue
		}
		c := p.Collection(r.Time)
		j, ok := at[c]
		if !ok {
			j = len(colls)
			at[c] = j
			colls = append(colls, c)
			parts = append(parts, nil)
		}
		parts[j] = append(parts[j], *r)
	}
	return colls, parts
}
