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

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
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

// StatsStep is the step stats sums by: step, or with 0 the bucket window
// (a minute without one). A bucket's records count in the step of its
// window's start, so a step finer than bucket_window, or not a whole number
// of windows, is refused: it would show windows, not steps.
func (r *Reader) StatsStep(step time.Duration) (time.Duration, error) {
	w := r.Cfg.BucketWindow
	switch {
	case step < 0:
		return 0, fmt.Errorf("--step %v: want a positive duration", step)
	case step == 0 && w > 0:
		return w, nil
	case step == 0:
		return time.Minute, nil
	}
	if err := wholeWindows(step, w, "stats sums whole buckets", ", or query for single records"); err != nil {
		return 0, err
	}
	return step, nil
}

// wholeWindows refuses a step that is not a whole number of bucket windows
// w (0: no window, any step): why says what needs it, else what else to
// do.
func wholeWindows(step, w time.Duration, why, elseDo string) error {
	switch {
	case w > 0 && step < w:
		return fmt.Errorf("--step %s: the step cannot be finer than the bucket window (bucket_window %s): %s; use --step %s or more%s",
			shortDuration(step), shortDuration(w), why, shortDuration(w), elseDo)
	case w > 0 && step%w != 0:
		return fmt.Errorf("--step %s: the step must be a whole number of bucket windows (bucket_window %s), e.g. --step %s",
			shortDuration(step), shortDuration(w), shortDuration((step/w+1)*w))
	}
	return nil
}

// StatsCheck refuses what Stats would refuse of q and step without reading
// anything (mode flat, a condition on a field that is not a bucket_key
// field, a step StatsStep refuses) and returns the step.
func (r *Reader) StatsCheck(q Query, step time.Duration) (time.Duration, error) {
	if r.Cfg.Mode == model.ModeFlat {
		return 0, fmt.Errorf("stats reads bucket fields; mode flat has no buckets (use query)")
	}
	for _, c := range q.Conds {
		if !r.keyField(c.Field) {
			return 0, fmt.Errorf("condition %s: stats reads bucket fields only; %s is not a bucket_key field (%s)",
				c, c.Field, strings.Join(r.Cfg.BucketKey, ","))
		}
	}
	return r.StatsStep(step)
}

// Stats sums the buckets of q (key conditions and time range; other
// conditions are refused: the buckets' fields cannot answer them) per step
// of time (see StatsStep), from the bucket fields alone: count, counts and
// stats, never the entries. Steps without buckets are left out.
func (r *Reader) Stats(ctx context.Context, q Query, step time.Duration) ([]*Window, error) {
	step, err := r.StatsCheck(q, step)
	if err != nil {
		return nil, err
	}
	byStart := map[int64]*Window{}
	if err := r.statsInto(ctx, q, step, byStart); err != nil {
		return nil, err
	}
	return sortedWindows(byStart), nil
}

// statsInto adds the buckets of q in r's target to the windows byStart (by
// their start in Unix milliseconds) of step, a step StatsCheck gave.
func (r *Reader) statsInto(ctx context.Context, q Query, step time.Duration, byStart map[int64]*Window) error {
	colls, err := r.Collections(ctx, q.From, q.To)
	if err != nil {
		return err
	}
	proj := bson.D{{Key: model.Start, Value: 1}, {Key: model.MinTs, Value: 1}, {Key: model.Count, Value: 1}, {Key: model.Counts, Value: 1}, {Key: model.Stats, Value: 1}}
	f := r.bucketFilter(q)
	if f == nil {
		f = bson.D{}
	}
	old := r.oldNames()
	for _, coll := range colls {
		cur, err := r.DB.Collection(coll).Find(ctx, f, options.Find().SetProjection(proj))
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.Label(coll), err)
		}
		for cur.Next(ctx) {
			d := cur.Current
			at, ok := d.Lookup(model.Start).TimeOK()
			if !ok {
				at, _ = d.Lookup(model.MinTs).TimeOK()
			}
			at = at.UTC().Truncate(step)
			w := byStart[at.UnixMilli()]
			if w == nil {
				w = &Window{Start: at, Counts: map[string]map[string]int64{}, Stats: map[string]*Agg{}}
				byStart[at.UnixMilli()] = w
			}
			w.add(d, old)
		}
		if err := cur.Err(); err != nil {
			_ = cur.Close(ctx)
			return fmt.Errorf("reading %s: %w", r.Label(coll), err)
		}
		_ = cur.Close(ctx)
	}
	return nil
}

// add adds bucket d to w: its counts and stats by their fields' paths
// (see eachStat, eachCount; old maps an earlier version's names to them).
func (w *Window) add(d bson.Raw, old map[string]string) {
	w.Buckets++
	w.Records += d.Lookup(model.Count).AsInt64()
	eachCount(d, old, func(field, value string, n int64) {
		m := w.Counts[field]
		if m == nil {
			m = map[string]int64{}
			w.Counts[field] = m
		}
		m[value] += n
	})
	eachStat(d, old, func(field string, s bson.Raw) {
		num := func(k string) float64 { f, _ := s.Lookup(k).AsFloat64OK(); return f }
		a := w.Stats[field]
		if a == nil {
			a = &Agg{Min: num("min"), Max: num("max")}
			w.Stats[field] = a
		}
		a.Min, a.Max = min(a.Min, num("min")), max(a.Max, num("max"))
		a.Sum += num("sum")
		a.N += int64(num("n"))
	})
}

// sortedWindows is the windows of byStart by time.
func sortedWindows(byStart map[int64]*Window) []*Window {
	out := make([]*Window, 0, len(byStart))
	for _, w := range byStart {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *Window) int { return a.Start.Compare(b.Start) })
	return out
}

// PrintStats writes windows, summed per step, as a table, then a chart of
// records per step by time: a step without records is drawn at 0.
func PrintStats(w io.Writer, windows []*Window, step time.Duration, chart bool) error {
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
	first, last := windows[0].Start, windows[len(windows)-1].Start
	series, err := StatsSeries(windows, step)
	if err != nil {
		_, err := fmt.Fprintf(w, "\nno chart: %v\n", err)
		return err
	}
	empty := ""
	if n := len(series) - len(windows); n > 0 {
		empty = fmt.Sprintf(", %d steps without records drawn at 0", n)
	}
	_, err = fmt.Fprintf(w, "\nrecords per %s, %s .. %s%s\n%s\n", shortDuration(step), first.Format(time.RFC3339), last.Format(time.RFC3339),
		empty, asciigraph.Plot(series, asciigraph.Height(8), asciigraph.Width(min(72, max(len(series), 20)))))
	return err
}

// maxChartSteps is the most steps a chart draws.
const maxChartSteps = 100000

// StatsSeries is the records of windows per step from the first window to
// the last, by time: 0 for a step without records.
func StatsSeries(windows []*Window, step time.Duration) ([]float64, error) {
	if len(windows) == 0 {
		return nil, nil
	}
	first, last := windows[0].Start, windows[len(windows)-1].Start
	if step <= 0 {
		return nil, fmt.Errorf("step %v: want a positive step", step)
	}
	n := last.Sub(first) / step
	if n >= maxChartSteps {
		return nil, fmt.Errorf("%s .. %s is %d steps of %s, more than a chart draws (%d); use a larger --step or a shorter range",
			first.Format(time.RFC3339), last.Format(time.RFC3339), n+1, shortDuration(step), maxChartSteps)
	}
	series := make([]float64, n+1)
	for _, win := range windows {
		series[win.Start.Sub(first)/step] += float64(win.Records)
	}
	return series, nil
}

// shortDuration writes d as the keys take it: 1m, 1h, 1h30m, 90s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
