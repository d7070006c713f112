// Command mongolog checks the plugin's configuration in a Fluent Bit
// configuration file and reads what the plugin stored.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

func main() {
	root := &cobra.Command{
		Use:           "mongolog",
		Short:         "Check out_mongodb configurations and read the logs it stored",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(checkCommand(), queryCommand(), verifyCommand(), statsCommand(), pruneCommand(), importCommand())
	ctx, stop := signalContext()
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "mongolog:", err)
		os.Exit(2)
	}
}

func checkCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "check -c FILE",
		Short: "Validate every mongodb output of a Fluent Bit configuration (classic or YAML) with the plugin's own rules",
		Long: "check reads a Fluent Bit configuration (classic, with @INCLUDE and @SET, or YAML), validates every\n" +
			"[OUTPUT] whose Name is mongodb as the plugin does at start, names unknown keys with the key they\n" +
			"resemble, and exits 1 on any problem.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			problems, err := mongolog.Check(cmd.OutOrStdout(), file, os.Getenv)
			if err != nil {
				return err
			}
			if problems > 0 {
				os.Exit(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "Fluent Bit configuration file")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// targetKeys are the plugin keys the read commands take as flags.
var targetKeys = []string{"uri", "uri_file", "uri_env", "database", "collection", "mode", "bucket_key", "bucket_window",
	"partition", "time_key", "tag_key", "key_replace_dot", "key_replace_dollar", "connect_timeout"}

// target is where a read command reads: -c FILE [--output NAME] and plugin
// keys as flags.
type target struct {
	file, output string
	keys         map[string]*string
}

func addTarget(cmd *cobra.Command, keys ...string) *target {
	if len(keys) == 0 {
		keys = targetKeys
	}
	t := &target{keys: map[string]*string{}}
	cmd.Flags().StringVarP(&t.file, "config", "c", "", "Fluent Bit configuration whose mongodb output says where to read")
	cmd.Flags().StringVar(&t.output, "output", "", "with -c: the mongodb output of this instance_name or Alias (needed when there are several)")
	for _, k := range keys {
		def := ""
		for _, d := range conf.Keys() {
			if d.Key == k {
				def = d.Default
			}
		}
		t.keys[k] = cmd.Flags().String(k, "", "the plugin's "+k+" (default "+strings.TrimSpace(def+" as the plugin")+")")
	}
	return t
}

// resolved is the target with the flags given.
func (t *target) resolved(cmd *cobra.Command) mongolog.Target {
	keys := map[string]string{}
	for k, v := range t.keys {
		if cmd.Flags().Changed(k) {
			keys[k] = *v
		}
	}
	return mongolog.Target{File: t.file, Output: t.output, Keys: keys}
}

// open connects to what t names.
func (t *target) open(cmd *cobra.Command) (*conf.Config, *mongo.Database, func(), error) {
	return t.openChecked(cmd, nil)
}

// openChecked connects to what t names once check, if given, passes its
// configuration: usage errors come before any I/O.
func (t *target) openChecked(cmd *cobra.Command, check func(*conf.Config) error) (*conf.Config, *mongo.Database, func(), error) {
	cfg, err := t.resolved(cmd).Config(os.Getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	if check != nil {
		if err := check(cfg); err != nil {
			return nil, nil, nil, err
		}
	}
	db, closeFn, err := mongolog.Connect(cmd.Context(), cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, db, closeFn, nil
}

func queryCommand() *cobra.Command {
	var since, from, to, format, lagFlag string
	var limit int
	var follow, raw, table bool
	cmd := &cobra.Command{
		Use:   "query [field=value | field!=value | field>n | field>=n | field<n | field<=n | field~regex ...]",
		Short: "Print the records that match, in time order, out of buckets (or flat documents), across partitions",
		Long: "query prints the records that meet every condition, oldest first. Conditions on bucket_key fields\n" +
			"and the time range select buckets through their key, start, minTs and maxTs; the server unpacks them\n" +
			"and filters the entries. A number matches its text too (code=500 finds 500 and \"500\").",
	}
	tgt := addTarget(cmd, append(slices.Clone(targetKeys), "parse_key")...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var q mongolog.Query
		var err error
		if q.Conds, err = mongolog.ParseConds(args); err != nil {
			return err
		}
		if q.From, q.To, err = timeRange(since, from, to); err != nil {
			return err
		}
		q.Limit = limit
		switch {
		case raw:
			format = "raw"
		case table:
			format = "table"
		}
		if !slices.Contains(mongolog.Formats, format) {
			return fmt.Errorf("--format %q: want one of %s", format, strings.Join(mongolog.Formats, ", "))
		}
		cfg, db, closeFn, err := tgt.open(cmd)
		if err != nil {
			return err
		}
		defer closeFn()
		p := &mongolog.Printer{W: cmd.OutOrStdout(), Format: format, TimeKey: cfg.TimeKey, RawKey: cfg.ParseKey, Note: cmd.ErrOrStderr()}
		r := &mongolog.Reader{DB: db, Cfg: cfg}
		if !follow {
			n := 0
			if err := r.Query(cmd.Context(), q, func(rec bson.Raw) error { n++; return p.Print(rec) }); err != nil {
				return err
			}
			if err := p.Flush(); err != nil {
				return err
			}
			if n == 0 && len(q.Conds) > 0 {
				unknown, seen, err := r.UnknownFields(cmd.Context(), q)
				if err == nil && len(unknown) > 0 {
					return fmt.Errorf("no record matches, and none of the records of the range has %s; the records have: %s",
						strings.Join(unknown, ", "), strings.Join(seen, ", "))
				}
			}
			return nil
		}
		lag, err := followLag(cmd, lagFlag, tgt.file, cfg)
		if err != nil {
			return err
		}
		return r.Follow(cmd.Context(), q, time.Second, lag, func(rec bson.Raw) error {
			if err := p.Print(rec); err != nil {
				return err
			}
			return p.Flush()
		})
	}
	cmd.Flags().StringVar(&since, "since", "", "only records of the last duration (15m, 2h, 7d)")
	cmd.Flags().StringVar(&from, "from", "", "only records at or after this time (2024-06-01T10:00, RFC 3339; UTC)")
	cmd.Flags().StringVar(&to, "to", "", "only records before this time")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many records (0: all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new records as they land, like tail -f")
	cmd.Flags().StringVar(&lagFlag, "lag", "", "with --follow: how far behind the newest record printed to look for records that land late\n"+
		"(default: the [SERVICE] Flush of -c FILE, 1s without one, plus flush_timeout)")
	cmd.Flags().StringVar(&format, "format", "json", "json (JSON lines), table or raw")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the raw line (the parse_key field of unparsed records; others as JSON, said once on stderr); --format raw")
	cmd.Flags().BoolVar(&table, "table", false, "--format table")
	return cmd
}

// followLag is --lag, or the default of the target's configuration.
func followLag(cmd *cobra.Command, flag, file string, cfg *conf.Config) (time.Duration, error) {
	if !cmd.Flags().Changed("lag") {
		return mongolog.DefaultLag(file, cfg, os.Getenv)
	}
	lag, err := mongolog.ParseAge(flag)
	if err != nil {
		return 0, fmt.Errorf("--lag: %v", err)
	}
	return lag, nil
}

// signalContext ends on Ctrl-C or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func verifyCommand() *cobra.Command {
	var from, to, unique string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check stored buckets before they go cold; exit 1 on any problem",
		Long: "verify reads the buckets of a collection (or of --from/--to, across partitions) and checks that count\n" +
			"equals the entries, the entries lie inside the window and inside minTs/maxTs, stats and counts match the\n" +
			"entries, the ops account for every entry and no write's entries appear twice; --unique FIELD also checks\n" +
			"that no two records share FIELD. It prints each problem, naming the bucket, and exits 1 on any.",
		Args: cobra.NoArgs,
	}
	tgt := addTarget(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var opt mongolog.VerifyOptions
		var err error
		if opt.From, opt.To, err = timeRange("", from, to); err != nil {
			return err
		}
		opt.Unique = unique
		cfg, db, closeFn, err := tgt.open(cmd)
		if err != nil {
			return err
		}
		defer closeFn()
		out := cmd.OutOrStdout()
		problems := 0
		v, err := (&mongolog.Reader{DB: db, Cfg: cfg}).Verify(cmd.Context(), opt, func(p mongolog.Problem) {
			problems++
			fmt.Fprintln(out, p)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%d collections, %d documents, %d records: %d problems\n", v.Collections, v.Docs, v.Records, problems)
		if problems > 0 {
			os.Exit(1)
		}
		return nil
	}
	cmd.Flags().StringVar(&from, "from", "", "only buckets of records at or after this time")
	cmd.Flags().StringVar(&to, "to", "", "only buckets of records before this time")
	cmd.Flags().StringVar(&unique, "unique", "", "a field no two records may share (e.g. a request id)")
	return cmd
}

func statsCommand() *cobra.Command {
	var since, from, to, step string
	var noChart bool
	cmd := &cobra.Command{
		Use:   "stats [bucket_key field=value ...]",
		Short: "Activity per window from bucket fields alone: records, counts per value, min/avg/max of stats, and a chart",
		Long: "stats sums count, counts and stats of the buckets per window (or per --step, a whole number of windows),\n" +
			"without unpacking entries, and draws records per step by time, a step without records at 0. Conditions\n" +
			"name bucket_key fields only.",
	}
	tgt := addTarget(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var q mongolog.Query
		var err error
		if q.Conds, err = mongolog.ParseConds(args); err != nil {
			return err
		}
		if q.From, q.To, err = timeRange(since, from, to); err != nil {
			return err
		}
		var d time.Duration
		if step != "" {
			if d, err = mongolog.ParseAge(step); err != nil {
				return fmt.Errorf("--step: %v", err)
			}
		}
		cfg, db, closeFn, err := tgt.openChecked(cmd, func(cfg *conf.Config) (err error) {
			d, err = (&mongolog.Reader{Cfg: cfg}).StatsStep(d)
			return err
		})
		if err != nil {
			return err
		}
		defer closeFn()
		windows, err := (&mongolog.Reader{DB: db, Cfg: cfg}).Stats(cmd.Context(), q, d)
		if err != nil {
			return err
		}
		return mongolog.PrintStats(cmd.OutOrStdout(), windows, d, !noChart)
	}
	cmd.Flags().StringVar(&since, "since", "", "only the last duration (15m, 2h, 7d)")
	cmd.Flags().StringVar(&from, "from", "", "from this time")
	cmd.Flags().StringVar(&to, "to", "", "up to this time")
	cmd.Flags().StringVar(&step, "step", "", "sum per this step, a whole number of bucket windows (default: the bucket window)")
	cmd.Flags().BoolVar(&noChart, "no-chart", false, "the table only")
	return cmd
}

func pruneCommand() *cobra.Command {
	var olderThan string
	var rate int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older-than AGE [bucket_key field=value ...]",
		Short: "Delete the buckets of a key whose records are all older than an age, in paced batches; --dry-run shows what would go",
		Long: "prune is per-key retention for data already written: it deletes, across partitions and oldest first,\n" +
			"the buckets (flat: the documents) that match the conditions and whose newest record is older than\n" +
			"--older-than, at most --rate documents per second. --dry-run prints each one that would go.",
	}
	tgt := addTarget(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if olderThan == "" {
			return fmt.Errorf("--older-than is required: prune deletes nothing without an age")
		}
		age, err := mongolog.ParseAge(olderThan)
		if err != nil {
			return fmt.Errorf("--older-than: %v", err)
		}
		opt := mongolog.PruneOptions{Before: time.Now().Add(-age), Rate: rate, DryRun: dryRun}
		if opt.Conds, err = mongolog.ParseConds(args); err != nil {
			return err
		}
		cfg, db, closeFn, err := tgt.openChecked(cmd, func(cfg *conf.Config) error {
			_, err := (&mongolog.Reader{Cfg: cfg}).PruneFilter(opt)
			return err
		})
		if err != nil {
			return err
		}
		defer closeFn()
		out := cmd.OutOrStdout()
		p, err := (&mongolog.Reader{DB: db, Cfg: cfg}).Prune(cmd.Context(), opt, func(s string) { fmt.Fprintln(out, s) })
		verb := "deleted"
		if dryRun {
			verb = "would delete"
		}
		if err == nil || p.Docs > 0 {
			fmt.Fprintf(out, "%s %d documents holding %d records\n", verb, p.Docs, p.Records)
		}
		return err
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete what is wholly older than this age (30d, 12h)")
	cmd.Flags().IntVar(&rate, "rate", 5000, "documents deleted per second at most")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be deleted, delete nothing")
	return cmd
}

func importCommand() *cobra.Command {
	var tag string
	var lines int
	cmd := &cobra.Command{
		Use:   "import [flags] FILE|GLOB|- ...",
		Short: "Store log files (globs, .gz, - for stdin) through the plugin's own pipeline, exactly once when run again",
		Long: "import sends each line of the files, as the record {log: line}, through the plugin's pipeline with the\n" +
			"keys of a Fluent Bit output (-c) or of the flags (every plugin key is one, e.g. --parser apache_combined\n" +
			"--time_from_log on). A record's time is its file's modification time, or with a parser and time_from_log\n" +
			"the time in the line. The chunks are the same on every run over unchanged files: a run interrupted\n" +
			"(Ctrl-C stops between chunks) and started again stores every line exactly once.",
		Args: cobra.MinimumNArgs(1),
	}
	var all []string
	for _, k := range conf.Keys() {
		all = append(all, k.Key)
	}
	tgt := addTarget(cmd, all...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		target := tgt.resolved(cmd)
		m, err := target.Map(os.Getenv)
		if err != nil {
			return err
		}
		if m.Get("plugin_log_level") == "" {
			m.Set("plugin_log_level", "warn")
		}
		stderr := cmd.ErrOrStderr()
		if !cmd.Flags().Changed("tag") {
			if tag, err = target.Tag(os.Getenv, "import"); err != nil {
				return err
			}
			if target.File != "" {
				fmt.Fprintf(stderr, "tag %s (one the output's Match accepts; --tag sets another)\n", tag)
			}
		}
		in, err := instance.New(m, "import", os.Stderr)
		if err != nil {
			return err
		}
		var bar *progressbar.ProgressBar
		last := time.Now()
		start := time.Now()
		progress := func(read, total, records int64) {
			if bar == nil && isTerminal(os.Stderr) && total > 0 {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr), progressbar.OptionShowBytes(true),
					progressbar.OptionSetDescription("importing"), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
					progressbar.OptionThrottle(100*time.Millisecond))
			}
			if bar != nil {
				_ = bar.Set64(read)
				bar.Describe(fmt.Sprintf("%d records, %.0f/s", records, float64(records)/time.Since(start).Seconds()))
				return
			}
			if time.Since(last) >= 5*time.Second {
				fmt.Fprintf(stderr, "imported %d records (%d of %d bytes), %.0f records/s\n", records, read, total,
					float64(records)/time.Since(start).Seconds())
				last = time.Now()
			}
		}
		res, err := mongolog.Import(cmd.Context(), in, mongolog.ImportOptions{Paths: args, Tag: tag, ChunkLines: lines, Progress: progress})
		in.Exit()
		if bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(stderr)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "imported %d records from %d files in %d chunks (%d retries) in %v: %d stored, %d already there, %d parked\n",
			res.Records, res.Files, res.Chunks, res.Retries, time.Since(start).Round(time.Millisecond), res.Stored, res.Found, res.Parked)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: run the same import again to go on; nothing is stored twice")
		}
		return err
	}
	cmd.Flags().StringVar(&tag, "tag", "", "the records' tag (default: import; with -c, import put in the output's Match, as app.import for app.*)")
	cmd.Flags().IntVar(&lines, "chunk-lines", 1000, "lines per chunk")
	return cmd
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// timeRange reads --since, --from and --to; --from wins over --since.
func timeRange(since, from, to string) (start, end time.Time, err error) {
	if since != "" {
		d, err := mongolog.ParseAge(since)
		if err != nil {
			return start, end, fmt.Errorf("--since: %v", err)
		}
		start = time.Now().Add(-d)
	}
	if from != "" {
		if start, err = mongolog.ParseTime(from); err != nil {
			return start, end, fmt.Errorf("--from: %v", err)
		}
	}
	if to != "" {
		if end, err = mongolog.ParseTime(to); err != nil {
			return start, end, fmt.Errorf("--to: %v", err)
		}
	}
	return start, end, nil
}
