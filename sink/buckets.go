package sink

import (
	"context"
	"maps"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// writeBuckets writes the chunk's groups after one read for what earlier
// attempts of the chunk stored.
func (s *Sink) writeBuckets(ctx context.Context, f *flush, res *Result) error {
	var groups []*bucketer.Group
	colls, parts := s.route(f)
	for i, coll := range colls {
		if err := s.prepare(ctx, coll, false); err != nil {
			return err
		}
		groups = append(groups, s.groupsIn(coll, f.tag, f.batch, parts, i)...)
	}
	res.Groups = len(groups)
	// Stored is read under the groups' locks (see Buckets.Write): the
	// records to write are decided there.
	var jobs []writer.Job
	var outs []writer.Outcome
	err := errkind.Guard(func() (err error) {
		outs, err = s.buckets.Write(ctx, f.id, groups, f.retried, f.knownParked(), func(stored map[int]bool, parked map[int]string) []writer.Job {
			f.found, f.storedBefore = len(stored) > 0, len(stored)
			for _, g := range groups {
				if todo := f.pending(g.Records, stored, parked); len(todo) > 0 {
					k := groupKey(g)
					jobs = append(jobs, writer.Job{Group: g, Recs: todo, Limit: f.prev.limits[k], Drops: f.prev.drops})
				}
			}
			return jobs
		})
		return err
	})
	if outs == nil && err != nil {
		// Nothing was written: what earlier attempts learnt holds.
		maps.Copy(f.limits, f.prev.limits)
		maps.Copy(f.drops, f.prev.drops)
	}
	for i, o := range outs {
		res.Stored += o.Stored
		res.Created += o.Created
		f.parked = append(f.parked, o.Poison...)
		if o.Limit > 0 {
			f.limits[groupKey(jobs[i].Group)] = o.Limit
		}
		maps.Copy(f.drops, o.Drops)
	}
	return err
}

// groupsIn groups the records of tag that route sends to its j-th
// collection, coll.
func (s *Sink) groupsIn(coll, tag string, b *parser.Batch, parts [][]*parser.Record, j int) []*bucketer.Group {
	var groups []*bucketer.Group
	if parts == nil {
		groups = s.opt.Grouper.Group(tag, b.Records)
	} else {
		groups = s.opt.Grouper.GroupRefs(tag, parts[j])
	}
	for _, g := range groups {
		g.Collection = coll
	}
	return groups
}

// groupKey names a group in memo.limits.
func groupKey(g *bucketer.Group) string { return g.Collection + "\x00" + g.ID }
