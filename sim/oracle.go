package sim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// The oracle: after a run has healed (every held command delivered, every
// chunk answered Done), what the server holds must be what Fluent Bit was
// promised.
//   - Each record is stored or parked exactly as often as chunks holding
//     it were answered Done: never lost, never twice, never both.
//   - A record the server refuses is parked, never stored.
//   - Every bucket holds count entries, within bucket_max_records and
//     bucket_max_bytes, its ops accounting for every entry, its minTs and
//     maxTs those of its entries, and the entries of one chunk's write in
//     the chunk's order.

// check runs the oracle on the server as the run left it.
func (r *run) check() error {
	want := map[string]int{}
	marked := map[string]bool{}
	owned := map[string]bool{} // rids of records with their own id
	for _, a := range r.agents {
		for _, c := range a.chunks {
			if c.state != acked {
				continue
			}
			for i, rid := range c.content.rids {
				if eid := c.content.eids[i]; eid != "" {
					owned[rid] = true
					if c.content.lastOf(eid) != rid {
						continue // not written: the last of its id stands for it
					}
				}
				want[rid]++
			}
		}
	}
	stored, parked := map[string]int{}, map[string]int{}
	holds := map[string]string{} // by own id: the rid its document holds
	var errs []error
	var docs []bson.Raw
	for _, coll := range r.recordColls() {
		docs = append(docs, r.srv.Docs(coll)...)
	}
	for _, d := range docs {
		if r.cfg.Mode == model.ModeFlat {
			eid, _ := d.Lookup(model.ID).StringValueOK()
			if standIn, _ := d.Lookup(model.Sealed).BooleanOK(); standIn {
				continue // the stand-in of a record parked (see writer.fence)
			}
			rid, msg := ridOf(d)
			if eid != "" {
				holds[eid] = rid
			}
			stored[rid]++
			marked[rid] = marked[rid] || isMarked(msg)
			continue
		}
		errs = append(errs, r.checkBucket(d, stored, marked)...)
	}
	for _, d := range r.srv.Docs(deadLetters) {
		rid, err := r.parkedRid(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parked[rid]++
	}
	rids := map[string]bool{}
	for _, m := range []map[string]int{want, stored, parked, r.expired} {
		for rid := range m {
			rids[rid] = true
		}
	}
	sorted := slices.SortedFunc(func(yield func(string) bool) {
		for rid := range rids {
			if !yield(rid) {
				return
			}
		}
	}, compareRids)
	for _, rid := range sorted {
		w, s, p, e := want[rid], stored[rid], parked[rid], r.expired[rid]
		switch {
		case !owned[rid] && e > 0 && s+p <= w && s+p+e >= w:
			// Some copies expired with their partition.
		case !owned[rid] && e > 0:
			errs = append(errs, fmt.Errorf("record %s: answered Done %d times, stored %d, parked %d, expired with a partition %d", rid, w, s, p, e))
		case owned[rid] && s+p > w:
			errs = append(errs, fmt.Errorf("record %s (own id): answered Done %d times, stored %d, parked %d", rid, w, s, p))
		case owned[rid]:
		case s+p != w:
			errs = append(errs, fmt.Errorf("record %s: answered Done %d times, stored %d, parked %d", rid, w, s, p))
		case marked[rid] && s > 0:
			errs = append(errs, fmt.Errorf("record %s: the server refuses it, yet it is stored %d times", rid, s))
		}
		r.res.Stored += s
		r.res.Parked += p
	}
	errs = append(errs, r.checkVersions(holds, parked)...)
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Errorf("... and %d more", len(errs)-10))
	}
	return errors.Join(errs...)
}

// checkVersions checks id_action replace: the document of each own id
// holds the version of a chunk answered Done last: one whose record was
// not parked and after whose answer no other such chunk's flush started
// (flushes that overlap are in either order). With every version parked,
// any version, or none.
func (r *run) checkVersions(holds map[string]string, parked map[string]int) []error {
	if !r.cfg.IDKey {
		return nil
	}
	type flushOf struct {
		rid              string
		started, ackedAt int
	}
	byID := map[string][]flushOf{}
	for _, a := range r.agents {
		for _, c := range a.chunks {
			if c.state != acked {
				continue
			}
			for _, eid := range c.content.eids {
				f := flushOf{c.content.lastOf(eid), c.started, c.ackedAt}
				if eid != "" && parked[f.rid] == 0 && !slices.Contains(byID[eid], f) {
					byID[eid] = append(byID[eid], f)
				}
			}
		}
	}
	var errs []error
	for _, eid := range slices.Sorted(maps.Keys(byID)) {
		fs := byID[eid]
		var last []string
		for _, f := range fs {
			if !slices.ContainsFunc(fs, func(g flushOf) bool { return g.started > f.ackedAt }) && !slices.Contains(last, f.rid) {
				last = append(last, f.rid)
			}
		}
		got, ok := holds[eid]
		switch {
		case ok && slices.Contains(last, got):
		case !ok:
			errs = append(errs, fmt.Errorf("event %s: no document, the last version answered Done is %s", eid, strings.Join(last, " or ")))
		default:
			errs = append(errs, fmt.Errorf("event %s: the document holds %s, the last version answered Done is %s", eid, got, strings.Join(last, " or ")))
		}
	}
	return errs
}

// checkBucket counts the records of bucket d and checks its invariants.
func (r *run) checkBucket(d bson.Raw, stored map[string]int, marked map[string]bool) []error {
	id := d.Lookup(model.ID).StringValue()
	var errs []error
	bad := func(f string, args ...any) {
		errs = append(errs, fmt.Errorf("bucket %s: %s", id, fmt.Sprintf(f, args...)))
	}
	logs, _ := d.Lookup(model.Logs).ArrayOK()
	entries, _ := logs.Values()
	count := int(d.Lookup(model.Count).AsInt64())
	if count != len(entries) {
		bad("count %d, %d entries", count, len(entries))
	}
	if count > r.cfg.MaxRecords {
		bad("%d entries, bucket_max_records %d", count, r.cfg.MaxRecords)
	}
	if len(d) > r.cfg.MaxBytes {
		bad("%d bytes, bucket_max_bytes %d", len(d), r.cfg.MaxBytes)
	}
	var minTs, maxTs bson.DateTime
	for i, e := range entries {
		doc, ok := e.DocumentOK()
		if !ok {
			bad("entry %d is not a document", i)
			continue
		}
		rid, msg := ridOf(doc)
		stored[rid]++
		marked[rid] = marked[rid] || isMarked(msg)
		ts := doc.Lookup("ts").DateTime()
		if i == 0 || ts < int64(minTs) {
			minTs = bson.DateTime(ts)
		}
		if i == 0 || ts > int64(maxTs) {
			maxTs = bson.DateTime(ts)
		}
	}
	if len(entries) > 0 {
		if got := d.Lookup(model.MinTs).DateTime(); got != int64(minTs) {
			bad("minTs %v, entries from %v", bson.DateTime(got), minTs)
		}
		if got := d.Lookup(model.MaxTs).DateTime(); got != int64(maxTs) {
			bad("maxTs %v, entries to %v", bson.DateTime(got), maxTs)
		}
	}
	runs := writer.OpRuns(d)
	n := 0
	last := map[uint32]string{} // by tag: the last record of its writes
	for _, run := range runs {
		n += len(run.Entries)
		for _, e := range run.Entries {
			rid, _ := ridOf(e.Document())
			if prev, ok := last[run.Tag]; ok && compareRids(rid, prev) < 0 {
				bad("record %s after %s in the writes of one chunk", rid, prev)
			}
			last[run.Tag] = rid
		}
	}
	if n != len(entries) {
		bad("ops account for %d entries of %d", n, len(entries))
	}
	return errs
}

// ridOf reads a stored record's rid and message.
func ridOf(d bson.Raw) (rid, msg string) {
	rid, _ = d.Lookup("rid").StringValueOK()
	msg, _ = d.Lookup("msg").StringValueOK()
	return rid, msg
}

func isMarked(msg string) bool {
	return strings.HasPrefix(msg, poisonMark) || strings.HasPrefix(msg, chokeMark)
}

// parkedRid reads the rid of a parked record from its raw bytes or, in a
// dead letter stored reduced (its raw cut short), from its _id: the id
// of the chunk's flush and the record's index.
func (r *run) parkedRid(d bson.Raw) (string, error) {
	if cut, _ := d.Lookup(model.Truncated).BooleanOK(); cut {
		id, _ := d.Lookup(model.ID).StringValueOK()
		chunk, i, _ := strings.Cut(id, ":")
		n, err := strconv.Atoi(i)
		for _, a := range r.agents {
			for _, c := range a.chunks {
				for gen := range len(a.chunks) {
					if err == nil && sink.GenID(sink.ChunkID(a.id, c.content.tag, c.content.bytes), gen) == chunk && n < len(c.content.rids) {
						return c.content.rids[n], nil
					}
				}
			}
		}
		return "", fmt.Errorf("dead letter %s, stored reduced: no chunk of the run has its id", id)
	}
	return parkedRid(d)
}

// parkedRid reads the rid of a parked record from its raw bytes.
func parkedRid(d bson.Raw) (string, error) {
	id := d.Lookup(model.ID)
	_, raw, ok := d.Lookup("raw").BinaryOK()
	if !ok {
		return "", fmt.Errorf("dead letter %v holds no raw bytes", id)
	}
	switch format, _ := d.Lookup("format").StringValueOK(); format {
	case "bson":
		rid, _ := ridOf(bson.Raw(raw))
		return rid, nil
	case "msgpack":
		var ev []any
		if err := msgpack.NewDecoder(bytes.NewReader(raw)).Decode(&ev); err != nil || len(ev) != 2 {
			return "", fmt.Errorf("dead letter %v: raw is not an event: %v", id, err)
		}
		rec, _ := ev[1].(map[string]any)
		rid, _ := rec["rid"].(string)
		return rid, nil
	}
	return "", fmt.Errorf("dead letter %v: format %v", id, d.Lookup("format"))
}

// compareRids orders rids "c<content>.<record>" by content, then record.
func compareRids(a, b string) int {
	ca, ra := ridParts(a)
	cb, rb := ridParts(b)
	if ca != cb {
		return ca - cb
	}
	return ra - rb
}

func ridParts(rid string) (int, int) {
	c, rec, _ := strings.Cut(strings.TrimPrefix(rid, "c"), ".")
	cn, _ := strconv.Atoi(c)
	rn, _ := strconv.Atoi(rec)
	return cn, rn
}
