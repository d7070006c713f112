package mongolog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// ExportOptions say what export writes, where, and whether it deletes
// what it wrote.
//
// A window of Step holds the buckets whose oldest record (minTs) lies in
// it, whole: every bucket is in exactly one window's file, so a bucket
// never waits on two windows before Prune may delete it. With
// bucket_window a step is a whole number of bucket windows, so a
// window's buckets are those that start in it. Flat documents go by their
// time.
type ExportOptions struct {
	Conds    []Cond        // as query takes them; Prune needs conditions on bucket_key fields with = or ~ only
	From, To time.Time     // whole windows of Step, aligned to UTC; To not after now
	Step     time.Duration // a window's length: dividing 24h or a whole number of days
	Dir      string
	Force    bool // export a window whose buckets verify finds wrong (Prune keeps those buckets)
	Prune    bool // delete the exported buckets once their file is re-read and matches its manifest
	Rate     int  // documents a second Prune deletes, paced as prune is
	// Hook, when set, is called at each stage of each window written:
	// "temp" (the data is in the synced temporary file, not yet renamed),
	// "file" (renamed, its manifest not yet written) and "done".
	Hook func(stage string, window time.Time)
	// Progress, when set, is told the windows done of the total and the
	// records written so far.
	Progress func(done, total int, records int64)
	// Report is told each problem (a bucket verify finds wrong, a window
	// refused, a bucket Prune kept), a line each.
	Report func(string)
}

// Exported counts what export did.
type Exported struct {
	Windows, Written, Skipped, Refused int
	Records, Docs                      int64 // in the files written by this run
	Deleted, Kept                      int64 // by Prune: documents deleted, and kept because they changed since
}

// Manifest describes one exported file. It is written after the file, so
// a file with a manifest whose sha256 matches is complete.
type Manifest struct {
	File       string     `json:"file"`
	Database   string     `json:"database"`
	Collection string     `json:"collection"`
	From       time.Time  `json:"from"` // the window
	To         time.Time  `json:"to"`
	Conditions []string   `json:"conditions"`
	Records    int64      `json:"records"` // lines in the file
	Buckets    int64      `json:"buckets"` // documents the records came from (flat: the records)
	First      *time.Time `json:"first"`   // the oldest record's time; null without records
	Last       *time.Time `json:"last"`
	Bytes      int64      `json:"bytes"` // of the gzip file
	SHA256     string     `json:"sha256"`
	Forced     []string   `json:"forced"` // what verify found wrong, exported with --force
	// Stored are the documents exported, as Prune deletes them: a bucket
	// only while it holds the count it was exported with.
	Stored []StoredDoc `json:"stored"`
}

// StoredDoc is one exported document.
type StoredDoc struct {
	Collection string          `json:"collection"`
	ID         json.RawMessage `json:"id"`              // its _id, canonical extended JSON
	Count      int64           `json:"count,omitempty"` // a bucket's count when exported
	Forced     bool            `json:"forced,omitempty"`
	// Digest is the sha256 of what the document held when exported (see
	// digest): Prune deletes it only while it holds the same.
	Digest string `json:"digest"`
}

// digest names what a document holds, as Prune compares it with what was
// exported: a bucket's count, ops and entries (a bucket re-created with
// the same _id and count by a later chunk has other ops and entries), a
// flat document's bytes.
func digest(d bson.Raw, flat bool) string {
	h := sha256.New()
	if flat {
		h.Write(d)
	} else {
		h.Write([]byte(strconv.FormatInt(d.Lookup(model.Count).AsInt64(), 10)))
		for _, f := range []string{model.Ops, model.Logs} {
			v := d.Lookup(f)
			h.Write([]byte{0, byte(v.Type)})
			h.Write(v.Value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ExportCheck refuses what Export would refuse of opt without reading
// anything and returns the windows' starts.
func (r *Reader) ExportCheck(opt ExportOptions, now time.Time) ([]time.Time, error) {
	step := opt.Step
	day := 24 * time.Hour
	switch {
	case step <= 0 || day%step != 0 && step%day != 0:
		return nil, fmt.Errorf("--step %s: want a duration that divides 24h (1h, 6h, 1d) or a whole number of days, so windows align to UTC", shortDuration(step))
	case opt.Dir == "":
		return nil, fmt.Errorf("--dir is required: the directory the files go to")
	case opt.From.IsZero() || opt.To.IsZero():
		return nil, fmt.Errorf("--from and --to are required: export writes whole windows of --step")
	case !opt.From.Before(opt.To):
		return nil, fmt.Errorf("--from %s is not before --to %s", opt.From.UTC().Format(time.RFC3339), opt.To.UTC().Format(time.RFC3339))
	}
	if r.Cfg.Mode != model.ModeFlat {
		if err := wholeWindows(step, r.Cfg.BucketWindow, "export writes whole buckets", ""); err != nil {
			return nil, err
		}
	}
	for _, b := range []struct {
		flag string
		t    time.Time
	}{{"--from", opt.From}, {"--to", opt.To}} {
		if at := b.t.UTC().Truncate(step); !at.Equal(b.t) {
			return nil, fmt.Errorf("%s %s is not the start of a window of --step %s (UTC): use %s", b.flag, b.t.UTC().Format(time.RFC3339),
				keyDuration(step), at.Format(time.RFC3339))
		}
	}
	if latest := now.UTC().Truncate(step); opt.To.After(latest) {
		return nil, fmt.Errorf("--to %s: the window ending then is still being written; export closed windows, up to --to %s",
			opt.To.UTC().Format(time.RFC3339), latest.Format(time.RFC3339))
	}
	if opt.Prune && r.Cfg.Mode != model.ModeFlat {
		if c, ok := r.entryCond(opt.Conds); ok {
			return nil, fmt.Errorf("--prune deletes whole buckets, so its conditions select whole buckets: bucket_key fields with = or ~; %s is not one", c)
		}
	}
	var starts []time.Time
	for at := opt.From.UTC(); at.Before(opt.To); at = at.Add(step) {
		starts = append(starts, at)
	}
	return starts, nil
}

// entryCond is the first condition that selects entries rather than whole
// buckets (one the buckets' key cannot answer alone).
func (r *Reader) entryCond(conds []Cond) (Cond, bool) {
	for _, c := range conds {
		if _, ok := r.keyField(c.Field); !ok || c.Op != "=" && c.Op != "~" {
			return c, true
		}
	}
	return Cond{}, false
}

// Export writes the records of each window of opt (see ExportOptions) to
// one gzip file of JSON lines in opt.Dir, {"key": <the bucket's key>,
// "record": <the record as query prints it>} (flat: the record alone),
// and a manifest beside it. It verifies each bucket first (verify's
// checks) and refuses a window with a bad bucket unless opt.Force. Files
// are the same bytes on every run over the same data. It is resumable: a
// window whose manifest is there and matches its file is skipped; any
// other is written again (to a temporary file, synced, renamed, then its
// manifest the same way), so a run killed anywhere and run again leaves
// every record in one file once.
func (r *Reader) Export(ctx context.Context, opt ExportOptions) (Exported, error) {
	var res Exported
	starts, err := r.ExportCheck(opt, time.Now())
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return res, err
	}
	if opt.Report == nil {
		opt.Report = func(string) {}
	}
	for i, at := range starts {
		if err := r.exportWindow(ctx, opt, at, &res); err != nil {
			return res, err
		}
		res.Windows++
		if opt.Progress != nil {
			opt.Progress(i+1, len(starts), res.Records)
		}
	}
	return res, nil
}

// windowFile is the path of the file of the window at, and of its
// manifest: in opt.Dir, whatever the database and collection names hold
// (see fileSafe).
func (r *Reader) windowFile(opt ExportOptions, at time.Time) (file, manifest string) {
	base := filepath.Join(opt.Dir, fmt.Sprintf("%s.%s.%s.%s", fileSafe(r.Cfg.Database), fileSafe(r.Cfg.Collection), at.UTC().Format("20060102T150405Z"), keyDuration(opt.Step)))
	return base + ".jsonl.gz", base + ".manifest.json"
}

// fileSafe is name made fit for a part of a file name: each '/', '\\'
// and control byte becomes %XX, so that a collection named "x/../../y"
// gives a file in the export folder (the name starts with the database,
// never empty, so it is never "." or ".."). A name without those bytes
// keeps the file name it always had.
func fileSafe(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '/' || c == '\\' || c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// exportWindow exports the window at, or skips it when its file is
// complete; then, with Prune, deletes what its manifest lists.
func (r *Reader) exportWindow(ctx context.Context, opt ExportOptions, at time.Time, res *Exported) error {
	file, manPath := r.windowFile(opt, at)
	m, err := readManifest(manPath)
	if err != nil {
		return err
	}
	if m != nil {
		sum, _, err := fileSum(file)
		if err == nil && sum == m.SHA256 {
			res.Skipped++
			return r.pruneWindow(ctx, opt, file, m, res)
		}
		// The file does not match: written again, unless its documents
		// were pruned already (the new file would miss them).
		if err := r.stillStored(ctx, m); err != nil {
			return err
		}
		if err := os.Remove(manPath); err != nil {
			return err
		}
	}
	m, ok, err := r.writeWindow(ctx, opt, at, file)
	if err != nil {
		return err
	}
	if !ok {
		res.Refused++
		return nil
	}
	hook(opt, "file", at)
	if err := writeAtomic(manPath, func(w io.Writer) error {
		b, err := json.MarshalIndent(m, "", "  ")
		if err == nil {
			_, err = w.Write(append(b, '\n'))
		}
		return err
	}); err != nil {
		return err
	}
	res.Written++
	res.Records += m.Records
	res.Docs += m.Buckets
	if err := r.pruneWindow(ctx, opt, file, m, res); err != nil {
		return err
	}
	hook(opt, "done", at)
	return nil
}

func hook(opt ExportOptions, stage string, at time.Time) {
	if opt.Hook != nil {
		opt.Hook(stage, at)
	}
}

// stillStored refuses to write again a window whose manifest lists
// documents that are gone (pruned): its file is the only copy of them.
func (r *Reader) stillStored(ctx context.Context, m *Manifest) error {
	for coll, ids := range storedIDs(m, true) {
		n, err := r.DB.Collection(coll).CountDocuments(ctx, bson.D{{Key: model.ID, Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil {
			return fmt.Errorf("reading %s: %w", coll, err)
		}
		if n < int64(len(ids)) {
			return fmt.Errorf("%s does not match its manifest (sha256 %s), and %d of the documents it lists are no longer in %s (pruned): "+
				"restore the file (from where it was copied) rather than export the window again, which would miss them", m.File, m.SHA256, int64(len(ids))-n, coll)
		}
	}
	return nil
}

// storedIDs are the _ids of m's documents by collection, with the forced
// ones or without.
func storedIDs(m *Manifest, forced bool) map[string]bson.A {
	out := map[string]bson.A{}
	for _, d := range m.Stored {
		if d.Forced && !forced {
			continue
		}
		if v, err := idValue(d.ID); err == nil {
			out[d.Collection] = append(out[d.Collection], v)
		}
	}
	return out
}

// idJSON and idValue turn an _id into canonical extended JSON and back.
func idJSON(v bson.RawValue) (json.RawMessage, error) {
	b, err := bson.MarshalExtJSON(bson.D{{Key: model.ID, Value: v}}, true, false)
	if err != nil {
		return nil, err
	}
	var one map[string]json.RawMessage
	if err := json.Unmarshal(b, &one); err != nil {
		return nil, err
	}
	return one[model.ID], nil
}

func idValue(j json.RawMessage) (bson.RawValue, error) {
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"`+model.ID+`":`+string(j)+`}`), true, &doc); err != nil {
		return bson.RawValue{}, err
	}
	return doc.Lookup(model.ID), nil
}

// windowWriter is a window's file being written: gzip over the file,
// hashed and counted as written.
type windowWriter struct {
	f     *os.File
	sum   hash.Hash
	n     int64
	gz    *gzip.Writer
	buf   *bufio.Writer
	print *Printer
}

func (w *windowWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.sum.Write(p[:n])
	w.n += int64(n)
	return n, err
}

func newWindowWriter(path string) (*windowWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &windowWriter{f: f, sum: sha256.New()}
	// A gzip header without name or time: the same bytes on every run.
	w.gz, _ = gzip.NewWriterLevel(w, gzip.BestCompression)
	w.buf = bufio.NewWriterSize(w.gz, 256<<10)
	w.print = &Printer{W: w.buf, Format: "json"}
	return w, nil
}

// close flushes and syncs the file.
func (w *windowWriter) close() error {
	err := errors.Join(w.buf.Flush(), w.gz.Close())
	if err == nil {
		err = w.f.Sync()
	}
	return errors.Join(err, w.f.Close())
}

// writeWindow reads, verifies and writes the window at to file, and
// returns its manifest; not ok when the window is refused.
func (r *Reader) writeWindow(ctx context.Context, opt ExportOptions, at time.Time, file string) (*Manifest, bool, error) {
	end := at.Add(opt.Step)
	tmp := file + ".tmp"
	w, err := newWindowWriter(tmp)
	if err != nil {
		return nil, false, err
	}
	m := &Manifest{File: filepath.Base(file), Database: r.Cfg.Database, Collection: r.Cfg.Collection, From: at, To: end,
		Conditions: []string{}, Forced: []string{}, Stored: []StoredDoc{}}
	for _, c := range opt.Conds {
		m.Conditions = append(m.Conditions, c.String())
	}
	bad, err := r.exportDocs(ctx, opt, at, end, w, m)
	if err = errors.Join(err, w.close()); err != nil {
		_ = os.Remove(tmp)
		return nil, false, err
	}
	if len(bad) > 0 && !opt.Force {
		_ = os.Remove(tmp)
		opt.Report(fmt.Sprintf("refused window %s .. %s of %s.%s: %d problems in %s (see above): mongolog verify shows them; --force exports the window as it is",
			at.Format(time.RFC3339), end.Format(time.RFC3339), r.Cfg.Database, r.Cfg.Collection, len(m.Forced), strings.Join(bad, ", ")))
		return nil, false, nil
	}
	m.Bytes, m.SHA256 = w.n, hex.EncodeToString(w.sum.Sum(nil))
	hook(opt, "temp", at)
	if err := os.Rename(tmp, file); err != nil {
		return nil, false, err
	}
	return m, true, syncDir(filepath.Dir(file))
}

// exportDocs writes the records of the documents of [at, end) to w,
// verifying each bucket, and fills m; it returns the buckets found wrong.
func (r *Reader) exportDocs(ctx context.Context, opt ExportOptions, at, end time.Time, w *windowWriter, m *Manifest) ([]string, error) {
	colls, err := r.Collections(ctx, at, end)
	if err != nil {
		return nil, fmt.Errorf("listing the collections of %s: %w", r.Cfg.Collection, err)
	}
	flat := r.Cfg.Mode == model.ModeFlat
	filter, sort := r.windowFilter(opt.Conds, at, end)
	_, filterEntries := r.entryCond(opt.Conds)
	writes := map[[32]byte]where{}
	summarizer := r.summarizer()
	var badDocs []string
	for _, coll := range colls {
		cur, err := r.DB.Collection(coll).Find(ctx, filter, options.Find().SetSort(sort))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", coll, err)
		}
		for cur.Next(ctx) {
			d := cur.Current
			id := docID(d)
			stored := StoredDoc{Collection: coll}
			if stored.ID, err = idJSON(d.Lookup(model.ID)); err != nil {
				_ = cur.Close(ctx)
				return nil, err
			}
			var entries []bson.RawValue
			if flat {
				entries = []bson.RawValue{{Type: bson.TypeEmbeddedDocument, Value: d}}
			} else {
				stored.Count = d.Lookup(model.Count).AsInt64()
				entries = r.verifyBucket(d, summarizer, writes, id, func(format string, args ...any) {
					p := Problem{Collection: coll, Doc: id, What: fmt.Sprintf(format, args...)}
					opt.Report(p.String())
					m.Forced = append(m.Forced, p.String())
					stored.Forced = true
				})
				if stored.Forced {
					badDocs = append(badDocs, id)
				}
				if filterEntries {
					if entries, err = r.matching(ctx, coll, d.Lookup(model.ID), opt.Conds); err != nil {
						_ = cur.Close(ctx)
						return nil, err
					}
				}
			}
			if len(badDocs) == 0 || opt.Force {
				if err := r.writeRecords(w, d, entries, m); err != nil {
					_ = cur.Close(ctx)
					return nil, err
				}
			}
			stored.Digest = digest(d, flat)
			m.Buckets++
			m.Stored = append(m.Stored, stored)
		}
		err = cur.Err()
		_ = cur.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", coll, err)
		}
	}
	return badDocs, nil
}

// windowFilter selects the documents of the window [at, end) and sorts
// them the same way on every run: buckets by their oldest record (and
// with the key conditions, through the lookup index), flat documents by
// their time and conditions; then by _id.
func (r *Reader) windowFilter(conds []Cond, at, end time.Time) (filter, sort bson.D) {
	in := bson.D{{Key: "$gte", Value: at}, {Key: "$lt", Value: end}}
	if r.Cfg.Mode == model.ModeFlat {
		filter = r.entryFilter(Query{Conds: conds, From: at, To: end}, "")
		return filter, bson.D{{Key: r.Cfg.TimeKey, Value: 1}, {Key: model.ID, Value: 1}}
	}
	filter = r.bucketFilter(Query{Conds: conds})
	if r.Cfg.BucketWindow > 0 {
		filter = append(filter, bson.E{Key: model.Start, Value: in})
	}
	filter = mergeSame(append(filter, bson.E{Key: model.MinTs, Value: in}))
	return filter, bson.D{{Key: model.MinTs, Value: 1}, {Key: model.ID, Value: 1}}
}

// matching are the entries of bucket id that meet conds, in their stored
// order, through query's pipeline.
func (r *Reader) matching(ctx context.Context, coll string, id bson.RawValue, conds []Cond) ([]bson.RawValue, error) {
	cur, err := r.DB.Collection(coll).Aggregate(ctx, r.entryPipeline(bson.D{{Key: model.ID, Value: id}}, Query{Conds: conds}, false, 0))
	if err != nil {
		return nil, fmt.Errorf("querying %s: %w", coll, err)
	}
	defer cur.Close(ctx)
	var out []bson.RawValue
	for cur.Next(ctx) {
		e := cur.Current.Lookup(model.Logs)
		out = append(out, bson.RawValue{Type: e.Type, Value: append([]byte(nil), e.Value...)})
	}
	return out, cur.Err()
}

// writeRecords writes the entries of document d, each as a line.
func (r *Reader) writeRecords(w *windowWriter, d bson.Raw, entries []bson.RawValue, m *Manifest) error {
	key, hasKey := d.Lookup(model.Key).DocumentOK()
	for _, e := range entries {
		doc, ok := e.DocumentOK()
		if !ok {
			continue // verify named it
		}
		line := bsoncore.NewDocumentBuilder()
		if hasKey && r.Cfg.Mode != model.ModeFlat {
			line.AppendDocument(model.Key, key)
		}
		line.AppendDocument("record", doc)
		if err := w.print.Print(bson.Raw(line.Build())); err != nil {
			return err
		}
		m.Records++
		if ts, ok := doc.Lookup(r.Cfg.TimeKey).TimeOK(); ok {
			first, last := ts.UTC(), ts.UTC()
			if m.First == nil || first.Before(*m.First) {
				m.First = &first
			}
			if m.Last == nil || last.After(*m.Last) {
				m.Last = &last
			}
		}
	}
	return nil
}

// pruneWindow deletes, with Prune, the documents m lists once its file is
// re-read and matches m: a document only while it holds what was exported
// (its digest; a bucket also its count and ops, checked by the delete
// itself), never one verify found wrong, at opt.Rate documents a second.
// Documents that changed since, or were re-created with the same _id, are
// kept and reported.
func (r *Reader) pruneWindow(ctx context.Context, opt ExportOptions, file string, m *Manifest, res *Exported) error {
	if !opt.Prune {
		return nil
	}
	if err := checkFile(file, m); err != nil {
		return err
	}
	start := time.Now()
	var done int64
	batch := max(min(opt.Rate, 1000), 1)
	byColl := map[string][]StoredDoc{}
	for _, d := range m.Stored {
		if !d.Forced && d.Digest != "" {
			byColl[d.Collection] = append(byColl[d.Collection], d)
		}
	}
	flat := r.Cfg.Mode == model.ModeFlat
	for coll, docs := range byColl {
		for len(docs) > 0 {
			part := docs[:min(batch, len(docs))]
			docs = docs[len(part):]
			or, err := r.unchanged(ctx, coll, part, flat)
			if err != nil {
				return fmt.Errorf("%s: %w", m.File, err)
			}
			if len(or) > 0 {
				if r.beforeDelete != nil {
					r.beforeDelete()
				}
				del, err := r.DB.Collection(coll).DeleteMany(ctx, bson.D{{Key: "$or", Value: or}})
				if err != nil {
					return fmt.Errorf("deleting from %s: %w", coll, err)
				}
				res.Deleted += del.DeletedCount
			}
			done += int64(len(part))
			if err := pace(ctx, start, done, opt.Rate); err != nil {
				return err
			}
		}
	}
	return r.keptAfterPrune(ctx, opt, m, res)
}

// unchanged reads the documents of docs from coll and returns a delete
// filter for each that holds what was exported: by _id, for a bucket its
// count and ops too, and for a flat document its version (id_action
// replace, see writer.ReplaceAll), so that a write applied after the read
// keeps it.
func (r *Reader) unchanged(ctx context.Context, coll string, docs []StoredDoc, flat bool) (bson.A, error) {
	want := map[string]string{} // _id as extended JSON -> digest
	var ids bson.A
	for _, d := range docs {
		id, err := idValue(d.ID)
		if err != nil {
			return nil, fmt.Errorf("id %s: %v", d.ID, err)
		}
		ids = append(ids, id)
		want[string(d.ID)] = d.Digest
	}
	cur, err := r.DB.Collection(coll).Find(ctx, bson.D{{Key: model.ID, Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", coll, err)
	}
	defer cur.Close(ctx)
	var or bson.A
	for cur.Next(ctx) {
		d := cur.Current
		id, err := idJSON(d.Lookup(model.ID))
		if err != nil || want[string(id)] != digest(d, flat) {
			continue
		}
		f := bson.D{{Key: model.ID, Value: d.Lookup(model.ID)}}
		if flat {
			var version any = bson.D{{Key: "$exists", Value: false}}
			if v, err := d.LookupErr(model.Version); err == nil {
				version = v
			}
			f = append(f, bson.E{Key: model.Version, Value: version})
		} else {
			f = append(f, bson.E{Key: model.Count, Value: d.Lookup(model.Count)})
			if ops := d.Lookup(model.Ops); ops.Type == bson.TypeArray {
				f = append(f, bson.E{Key: model.Ops, Value: ops})
			}
		}
		or = append(or, f)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", coll, err)
	}
	return or, nil
}

// keptAfterPrune reports the documents of m still stored after Prune:
// buckets that changed (grew) since the export.
func (r *Reader) keptAfterPrune(ctx context.Context, opt ExportOptions, m *Manifest, res *Exported) error {
	for coll, ids := range storedIDs(m, false) {
		n, err := r.DB.Collection(coll).CountDocuments(ctx, bson.D{{Key: model.ID, Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil {
			return fmt.Errorf("reading %s: %w", coll, err)
		}
		if n == 0 {
			continue
		}
		res.Kept += n
		opt.Report(fmt.Sprintf("kept %d documents of %s in %s: they changed since %s was written (or were made again with the same _id), so some of their records are in no file; "+
			"export the window into another --dir to take them", n, m.From.Format(time.RFC3339), coll, m.File))
	}
	return nil
}

// checkFile re-reads file: the gzip stream whole, as many lines as m's
// records, and m's sha256.
func checkFile(file string, m *Manifest) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := sha256.New()
	gz, err := gzip.NewReader(io.TeeReader(f, sum))
	if err != nil {
		return fmt.Errorf("re-reading %s: %v", file, err)
	}
	var lines int64
	buf := make([]byte, 256<<10)
	for {
		n, err := gz.Read(buf)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("re-reading %s: %v", file, err)
		}
	}
	_, _ = io.Copy(sum, f)
	if got := hex.EncodeToString(sum.Sum(nil)); lines != m.Records || got != m.SHA256 {
		return fmt.Errorf("re-reading %s: %d records and sha256 %s, its manifest says %d and %s: nothing of it is deleted", file, lines, got, m.Records, m.SHA256)
	}
	return nil
}

// readManifest reads a manifest; nil when there is none.
func readManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil // half written by hand, or damaged: the window is written again
	}
	return &m, nil
}

// fileSum is the SHA-256 of a file and its size.
func fileSum(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// writeAtomic writes path through a synced temporary file renamed over it.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// KeyConds refuses a condition that is not a bucket_key field=value: what
// --key takes.
func (r *Reader) KeyConds(conds []Cond) error {
	for _, c := range conds {
		if r.Cfg.Mode == model.ModeFlat {
			return fmt.Errorf("%s: mode flat has no bucket key; give the condition as an argument", c)
		}
		if _, ok := r.keyField(c.Field); !ok || c.Op != "=" {
			keys := r.Cfg.BucketKey
			if len(keys) == 0 {
				keys = []string{r.Cfg.TagKey}
			}
			return fmt.Errorf("%s: want a bucket_key field (%s) = value", c, strings.Join(keys, ","))
		}
	}
	return nil
}
