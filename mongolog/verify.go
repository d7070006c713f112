package mongolog

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// Problem is one thing verify found wrong, in one document.
type Problem struct {
	Collection, Doc string
	What            string
}

func (p Problem) String() string { return fmt.Sprintf("%s %s: %s", p.Collection, p.Doc, p.What) }

// VerifyOptions narrow and extend the checks.
type VerifyOptions struct {
	From, To time.Time // the buckets (documents) of this range; zero: open
	Unique   string    // a field no two records may share (e.g. a request id)
}

// Verified counts what verify read.
type Verified struct {
	Collections, Docs, Records int
}

// where is an entry's place.
type where struct {
	doc string
	i   int
}

// Verify checks the buckets of the range (or the flat documents) before
// they go cold: count equals the entries, which lie inside the window and
// inside minTs/maxTs (which they reach), stats and counts match the
// entries, the ops account for every entry, no write's entries appear
// twice (a write applied twice), and with Unique no two records share the
// field's value. It calls report with each problem.
func (r *Reader) Verify(ctx context.Context, opt VerifyOptions, report func(Problem)) (Verified, error) {
	vf := newVerifier(opt, report)
	err := r.verifyInto(ctx, vf)
	return vf.v, err
}

// verifier is what Verify knows across the collections it reads (of one
// target, or of several: a write applied twice, or a value Unique meets
// twice, is found across them too).
type verifier struct {
	opt    VerifyOptions
	report func(Problem)
	writes map[[32]byte]where // (chunk tag, entry) -> first place
	unique map[string]where
	v      Verified
}

func newVerifier(opt VerifyOptions, report func(Problem)) *verifier {
	return &verifier{opt: opt, report: report, writes: map[[32]byte]where{}, unique: map[string]where{}}
}

// verifyInto verifies the collections of r's target into vf.
func (r *Reader) verifyInto(ctx context.Context, vf *verifier) error {
	colls, err := r.Collections(ctx, vf.opt.From, vf.opt.To)
	if err != nil {
		return err
	}
	summarizer := r.summarizer()
	var filter bson.D
	if r.Cfg.Mode == model.ModeFlat {
		filter = r.entryFilter(Query{From: vf.opt.From, To: vf.opt.To}, "")
	} else {
		filter = r.bucketFilter(Query{From: vf.opt.From, To: vf.opt.To})
	}
	if filter == nil {
		filter = bson.D{}
	}
	for _, coll := range colls {
		vf.v.Collections++
		cur, err := r.DB.Collection(coll).Find(ctx, filter, options.Find().SetSort(bson.D{{Key: model.ID, Value: 1}}))
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.Label(coll), err)
		}
		for cur.Next(ctx) {
			r.verifyDoc(cur.Current, coll, summarizer, vf)
		}
		if err := cur.Err(); err != nil {
			_ = cur.Close(ctx)
			return fmt.Errorf("reading %s: %w", r.Label(coll), err)
		}
		_ = cur.Close(ctx)
	}
	return nil
}

// verifyDoc checks one document of coll into vf.
func (r *Reader) verifyDoc(d bson.Raw, coll string, summarizer *bucketer.Config, vf *verifier) {
	id := docID(d)
	ref := id // how another problem names the document
	if r.named {
		ref = r.Label(coll) + " " + id
	}
	vf.v.Docs++
	bad := func(format string, args ...any) {
		vf.report(Problem{Collection: r.Label(coll), Doc: id, What: fmt.Sprintf(format, args...)})
	}
	var entries []bson.RawValue
	switch {
	case holdsNoRecord(d):
		// A placeholder the plugin's fencing left (an empty sealed
		// bucket), or a flat record's stand-in.
	case r.Cfg.Mode == model.ModeFlat:
		entries = []bson.RawValue{{Type: bson.TypeEmbeddedDocument, Value: d}}
	default:
		entries = r.verifyBucket(d, summarizer, vf.writes, ref, bad)
	}
	vf.v.Records += len(entries)
	if vf.opt.Unique == "" {
		return
	}
	for i, e := range entries {
		val, err := e.Document().LookupErr(strings.Split(vf.opt.Unique, ".")...)
		if err != nil {
			continue
		}
		key := cell(val)
		if first, ok := vf.unique[key]; ok {
			bad("entry %d has %s %s, as entry %d of %s has", i, vf.opt.Unique, key, first.i, first.doc)
			continue
		}
		vf.unique[key] = where{ref, i}
	}
}

// holdsNoRecord reports whether d is a document the plugin's fencing
// leaves that holds no record: a sealed bucket without entries (a
// placeholder), or a flat record's stand-in ({_id, sealed: true}).
func holdsNoRecord(d bson.Raw) bool {
	if !model.IsSealed(d) {
		return false
	}
	if _, ok := d.Lookup(model.Logs).ArrayOK(); ok {
		return false
	}
	elems, _ := d.Elements()
	if len(elems) == 2 { // _id and sealed: a stand-in
		return true
	}
	n, ok := d.Lookup(model.Count).AsInt64OK()
	return ok && n == 0
}

// summarizer sums a bucket's entries as the plugin does, for the
// comparison with the bucket's stats and counts.
func (r *Reader) summarizer() *bucketer.Config {
	return &bucketer.Config{Stats: r.Cfg.Stats, CountBy: r.Cfg.CountBy, ReplaceDot: r.Cfg.KeyReplaceDot, ReplaceDollar: r.Cfg.KeyReplaceDollar}
}

// docID is a document's _id as a problem names it.
func docID(d bson.Raw) string {
	if s, ok := d.Lookup(model.ID).StringValueOK(); ok {
		return s
	}
	return d.Lookup(model.ID).String()
}

// verifyBucket checks one bucket and returns its entries.
func (r *Reader) verifyBucket(d bson.Raw, summarizer *bucketer.Config, writes map[[32]byte]where, id string,
	bad func(string, ...any)) []bson.RawValue {
	logs, ok := d.Lookup(model.Logs).ArrayOK()
	if !ok {
		bad("no logs array")
		return nil
	}
	entries, _ := logs.Values()
	count := d.Lookup(model.Count).AsInt64()
	if count != int64(len(entries)) {
		bad("count %d, %d entries", count, len(entries))
	}
	start, windowed := d.Lookup(model.Start).TimeOK()
	end, _ := d.Lookup(model.End).TimeOK()
	minTs, _ := d.Lookup(model.MinTs).TimeOK()
	maxTs, _ := d.Lookup(model.MaxTs).TimeOK()
	recs := make([]*parser.Record, 0, len(entries))
	var lo, hi time.Time
	for i, e := range entries {
		doc, ok := e.DocumentOK()
		if !ok {
			bad("entry %d is not a document", i)
			continue
		}
		ts, ok := doc.Lookup(r.Cfg.TimeKey).TimeOK()
		if !ok {
			bad("entry %d has no %s date", i, r.Cfg.TimeKey)
			continue
		}
		if windowed && (ts.Before(start) || !ts.Before(end)) {
			bad("entry %d at %s lies outside the window [%s, %s)", i, ts.UTC().Format(time.RFC3339Nano), start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
		}
		if ts.Before(minTs) || ts.After(maxTs) {
			bad("entry %d at %s lies outside minTs %s .. maxTs %s", i, ts.UTC().Format(time.RFC3339Nano), minTs.UTC().Format(time.RFC3339Nano), maxTs.UTC().Format(time.RFC3339Nano))
		}
		if len(recs) == 0 || ts.Before(lo) {
			lo = ts
		}
		if len(recs) == 0 || ts.After(hi) {
			hi = ts
		}
		recs = append(recs, &parser.Record{Index: i, Time: ts, Doc: bsoncore.Document(doc)})
	}
	if len(recs) > 0 && (!lo.Equal(minTs) || !hi.Equal(maxTs)) {
		bad("minTs %s and maxTs %s, the entries span %s .. %s", minTs.UTC().Format(time.RFC3339Nano), maxTs.UTC().Format(time.RFC3339Nano),
			lo.UTC().Format(time.RFC3339Nano), hi.UTC().Format(time.RFC3339Nano))
	}
	r.verifySummary(d, summarizer.Summarize(recs), bad)
	if ops, ok := d.Lookup(model.Ops).ArrayOK(); ok {
		vals, _ := ops.Values()
		runs := writer.OpRuns(d)
		covered := 0
		for _, run := range runs {
			covered += len(run.Entries)
			for j, e := range run.Entries {
				k := writeKey(run.Tag, e.Value)
				if first, ok := writes[k]; ok {
					bad("entry %d repeats entry %d of %s, from the same chunk (tag %07x): a write applied twice", run.At+j, first.i, first.doc, run.Tag)
					continue
				}
				writes[k] = where{id, run.At + j}
			}
		}
		if covered != len(entries) || len(runs) != len(vals) {
			bad("ops record %d entries in %d of %d elements, the bucket holds %d", covered, len(runs), len(vals), len(entries))
		}
	}
	return entries
}

func writeKey(tag uint32, entry []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{byte(tag >> 24), byte(tag >> 16), byte(tag >> 8), byte(tag)})
	h.Write(entry)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// verifySummary compares a bucket's stats and counts with those its
// entries give.
func (r *Reader) verifySummary(d bson.Raw, sum bucketer.Summary, bad func(string, ...any)) {
	// A field's stats are nested at its path, or under an earlier
	// version's name, or, in a bucket an earlier version began, both: the
	// two parts summarise different entries.
	type held struct {
		min, max, sum, n float64
		hasN             bool
	}
	stats := map[string]*held{}
	old := r.oldNames()
	eachStat(d, old, func(field string, s bson.Raw) {
		num := func(k string) float64 { f, _ := s.Lookup(k).AsFloat64OK(); return f }
		h := stats[field]
		if h == nil {
			h = &held{min: num("min"), max: num("max"), hasN: true}
			stats[field] = h
		}
		h.min, h.max = min(h.min, num("min")), max(h.max, num("max"))
		h.sum += num("sum")
		h.n += num("n")
		h.hasN = h.hasN && s.Lookup("n").Type != 0
	})
	for _, s := range sum.Stats {
		g := stats[s.Field]
		if g == nil {
			bad("stats.%s missing, the entries hold %d numbers", s.Field, s.N)
			continue
		}
		wantSum := s.Sum
		if !s.Float {
			wantSum = float64(s.IntSum)
		}
		if g.min != s.Min || g.max != s.Max || math.Abs(g.sum-wantSum) > 1e-9*math.Max(1, math.Abs(wantSum)) ||
			g.hasN && g.n != float64(s.N) {
			bad("stats.%s is min %s max %s sum %s n %s, the entries give min %s max %s sum %s n %d", s.Field,
				numText(g.min), numText(g.max), numText(g.sum), numText(g.n),
				numText(s.Min), numText(s.Max), numText(wantSum), s.N)
		}
	}
	want := map[string]int{}
	for _, c := range sum.Counts {
		want[c.Field+"."+c.Value] = c.N
	}
	got := map[string]int{}
	eachCount(d, old, func(field, value string, n int64) {
		got[field+"."+value] += int(n)
	})
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			bad("counts.%s is %d, the entries give %d", k, got[k], want[k])
		}
	}
}

// numText is f in decimal notation, as short as it can be (1020148, not
// 1.020148e+06).
func numText(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
