package mongolog

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/guptarohit/asciigraph"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// Agg is a numeric field's summary over a window.
type Agg struct {
	Min, Max, Sum float64
	N             int64
}

// Avg is the exact average: Sum / N.
func (a *Agg) Avg() float64 { return a.Sum / float64(a.N) }

// Window is the activity of one time step.
type Window struct {
	Start   time.Time
	Buckets int
	Records int64
	Counts  map[string]map[string]int64 // field -> value -> records
	Stats   map[string]*Agg             // field -> summary
}

// Stats sums the buckets of q (key conditions and time range; other
// conditions are refused: the buckets' fields cannot answer them) per step
// of time, from the bucket fields alone: count, counts and stats, never the
// entries. A step of 0 is the bucket window (a minute without one).
func (r *Reader) Stats(ctx context.Context, q Query, step time.Duration) ([]*Window, error) {
	if r.Cfg.Mode == conf.ModeFlat {
		return nil, fmt.Errorf("stats reads bucket fields; mode flat has no buckets (use query)")
	}
	for _, c := range q.Conds {
		if _, ok := r.keyField(c.Field); !ok {
			return nil, fmt.Errorf("condition %s: stats reads bucket fields only; %s is not a bucket_key field (%s)",
				c, c.Field, strings.Join(r.Cfg.BucketKey, ","))
		}
	}
	if step <= 0 {
		step = r.Cfg.BucketWindow
	}
	if step <= 0 {
		step = time.Minute
	}
	colls, err := r.Collections(ctx, q.From, q.To)
	if err != nil {
		return nil, err
	}
	proj := bson.D{{Key: "start", Value: 1}, {Key: "minTs", Value: 1}, {Key: "count", Value: 1}, {Key: "counts", Value: 1}, {Key: "stats", Value: 1}}
	byStart := map[int64]*Window{}
	for _, coll := range colls {
		f := r.bucketFilter(q)
		if f == nil {
			f = bson.D{}
		}
		cur, err := r.DB.Collection(coll).Find(ctx, f, options.Find().SetProjection(proj))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", coll, err)
		}
		for cur.Next(ctx) {
			d := cur.Current
			at, ok := d.Lookup("start").TimeOK()
			if !ok {
				at, _ = d.Lookup("minTs").TimeOK()
			}
			at = at.UTC().Truncate(step)
			w := byStart[at.UnixMilli()]
			if w == nil {
				w = &Window{Start: at, Counts: map[string]map[string]int64{}, Stats: map[string]*Agg{}}
				byStart[at.UnixMilli()] = w
			}
			w.Buckets++
			w.Records += d.Lookup("count").AsInt64()
			counts, _ := d.Lookup("counts").DocumentOK()
			fields, _ := counts.Elements()
			for _, fe := range fields {
				vals, _ := fe.Value().Document().Elements()
				m := w.Counts[fe.Key()]
				if m == nil {
					m = map[string]int64{}
					w.Counts[fe.Key()] = m
				}
				for _, v := range vals {
					m[v.Key()] += v.Value().AsInt64()
				}
			}
			stats, _ := d.Lookup("stats").DocumentOK()
			sfields, _ := stats.Elements()
			for _, se := range sfields {
				s := se.Value().Document()
				num := func(k string) float64 { f, _ := s.Lookup(k).AsFloat64OK(); return f }
				a := w.Stats[se.Key()]
				if a == nil {
					a = &Agg{Min: num("min"), Max: num("max")}
					w.Stats[se.Key()] = a
				}
				a.Min, a.Max = min(a.Min, num("min")), max(a.Max, num("max"))
				a.Sum += num("sum")
				a.N += int64(num("n"))
			}
		}
		if err := cur.Err(); err != nil {
			_ = cur.Close(ctx)
			return nil, fmt.Errorf("reading %s: %w", coll, err)
		}
		_ = cur.Close(ctx)
	}
	out := make([]*Window, 0, len(byStart))
	for _, w := range byStart {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *Window) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// PrintStats writes windows as a table, then a chart of records per
// window.
func PrintStats(w io.Writer, windows []*Window, chart bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "window\tbuckets\trecords\tcounts\tstats (min/avg/max)")
	for _, win := range windows {
		var counts, stats []string
		for _, f := range sortedKeys(win.Counts) {
			var vs []string
			for _, v := range sortedKeys(win.Counts[f]) {
				vs = append(vs, fmt.Sprintf("%s:%d", v, win.Counts[f][v]))
			}
			counts = append(counts, f+" "+strings.Join(vs, " "))
		}
		for _, f := range sortedKeys(win.Stats) {
			a := win.Stats[f]
			if a.N == 0 {
				stats = append(stats, fmt.Sprintf("%s %g/-/%g", f, a.Min, a.Max))
				continue
			}
			stats = append(stats, fmt.Sprintf("%s %g/%s/%g", f, a.Min, strconv.FormatFloat(a.Avg(), 'f', 1, 64), a.Max))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", win.Start.Format(time.RFC3339), win.Buckets, win.Records,
			strings.Join(counts, "; "), strings.Join(stats, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !chart || len(windows) < 2 {
		return nil
	}
	series := make([]float64, len(windows))
	for i, win := range windows {
		series[i] = float64(win.Records)
	}
	_, err := fmt.Fprintf(w, "\nrecords per window, %s .. %s\n%s\n", windows[0].Start.Format(time.RFC3339),
		windows[len(windows)-1].Start.Format(time.RFC3339), asciigraph.Plot(series, asciigraph.Height(8), asciigraph.Width(min(72, max(len(series), 20)))))
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
