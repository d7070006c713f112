package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// exportPauseEnv names a stage and a count ("temp:2": after the
// temporary file of the second window) at which export stops and waits
// to be killed: how the tests interrupt a run at a known point.
const exportPauseEnv = "MONGOLOG_EXPORT_PAUSE"

func exportCommand(env Env) *cobra.Command {
	var from, to, step, dir string
	var keys []string
	var force, prune bool
	var rate int
	cmd := &cobra.Command{
		Use:   "export --from T --to T --dir DIR [--key field=value ...] [conditions ...]",
		Short: "Write closed windows of records to gzip JSON-lines files with manifests, verified, exactly once; --prune deletes what was written",
		Long: "export writes one gzip file of JSON lines per window of --step (UTC-aligned) that holds documents in --dir\n" +
			"(the windows are found from the data: an empty one costs nothing and gets no file), each line\n" +
			"{\"key\": <the bucket's key>, \"record\": <the record as query prints it>}, and beside it a manifest (records,\n" +
			"buckets, first and last time, SHA-256 of the file), written last. A bucket belongs to the window of its\n" +
			"oldest record, whole. Each bucket is verified first (verify's checks): a window with a bad bucket is\n" +
			"refused, naming it, unless --force. The files are the same bytes on every run; a run killed anywhere and\n" +
			"run again skips the windows whose manifest matches their file and redoes the others. --prune deletes the\n" +
			"buckets of each window once its file is re-read and matches its manifest, at --rate a second; a bucket\n" +
			"that changed since it was written, or that verify found wrong, is kept.",
		Example: "  mongolog export -c fluent-bit.conf --from 2024-06-01 --to 2024-06-08 --dir /backup/logs\n" +
			"  mongolog export -c fluent-bit.conf --from 2024-06-01 --to 2024-06-02 --step 1h --key module=pay --dir out --prune",
	}
	tgt := addTarget(cmd, env, verifyKeys...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		q, err := queryOf(args, "", from, to)
		if err != nil {
			return err
		}
		opt := mongolog.ExportOptions{Conds: q.Conds, From: q.From, To: q.To, Dir: dir, Force: force, Prune: prune, Rate: rate}
		if opt.Step, err = mongolog.ParseAge(step); err != nil {
			return fmt.Errorf("--step: %v", err)
		}
		keyConds, err := mongolog.ParseConds(keys)
		if err != nil {
			return fmt.Errorf("--key: %v", err)
		}
		opt.Conds = append(keyConds, opt.Conds...)
		if opt.Hook, err = pauseHook(env, cmd); err != nil {
			return err
		}
		span, closeFn, err := tgt.span(cmd, func(cfg *conf.Config) error {
			r := &mongolog.Reader{Cfg: cfg}
			if err := r.KeyConds(keyConds); err != nil {
				return fmt.Errorf("--key: %v", err)
			}
			_, err := r.ExportCheck(opt, time.Now())
			return err
		})
		if err != nil {
			return err
		}
		defer closeFn()
		if err := span.None("export"); err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		opt.Report = func(s string) { fmt.Fprintln(out, s) }
		problems := 0
		// Each target its own file set (the files name their database
		// and collection) and summary line.
		for _, r := range span.Readers {
			var finish func()
			opt.Progress, finish = exportProgress(cmd.ErrOrStderr())
			res, err := r.Export(cmd.Context(), opt)
			finish()
			if err == nil || res.Windows > 0 {
				exportSummary(out, r.Cfg, dir, res, prune) // not a summary of nothing before an error
			}
			switch {
			case cmd.Context().Err() != nil:
				return &InterruptedError{Next: "run the same export again: it skips the windows written and redoes the one it was on"}
			case err != nil && span.Named:
				return fmt.Errorf("%s: %w", r.Place(), err)
			case err != nil:
				return err
			}
			problems += res.Refused + int(res.Kept)
		}
		if problems > 0 {
			return &ProblemsError{N: problems}
		}
		return nil
	}
	cmd.Flags().StringVar(&from, "from", "", "the first window's start (UTC, on a --step boundary)")
	cmd.Flags().StringVar(&to, "to", "", "the last window's end (UTC, on a --step boundary, not after now)")
	cmd.Flags().StringVar(&step, "step", "1d", "a window's length: dividing 24h (1h, 6h) or whole days")
	cmd.Flags().StringVar(&dir, "dir", "", "the directory the files and manifests go to")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "only the buckets of this bucket_key field=value (repeatable)")
	cmd.Flags().BoolVar(&force, "force", false, "export a window whose buckets verify finds wrong (--prune keeps those buckets)")
	cmd.Flags().BoolVar(&prune, "prune", false, "delete each window's buckets once its file is re-read and matches its manifest")
	cmd.Flags().IntVar(&rate, "rate", 5000, "with --prune: documents deleted per second at most")
	return cmd
}

// exportSummary is the line export ends with.
func exportSummary(out io.Writer, cfg *conf.Config, dir string, res mongolog.Exported, prune bool) {
	fmt.Fprintf(out, "%s.%s: %d windows to %s: %d written (%d records of %d documents), %d already there, %d refused, %d empty (no file)",
		cfg.Database, cfg.Collection, res.Windows, dir, res.Written, res.Records, res.Docs, res.Skipped, res.Refused,
		res.Windows-res.Written-res.Skipped-res.Refused)
	if prune {
		fmt.Fprintf(out, "; deleted %d documents, %d kept", res.Deleted, res.Kept)
	}
	fmt.Fprintln(out)
}

// pauseHook is the hook of exportPauseEnv, or nil without it.
func pauseHook(env Env, cmd *cobra.Command) (func(string, time.Time), error) {
	spec := env.getenv(exportPauseEnv)
	if spec == "" {
		return nil, nil
	}
	stage, nText, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nText)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s=%q: want stage:count, e.g. temp:2", exportPauseEnv, spec)
	}
	seen := 0
	return func(s string, at time.Time) {
		if s != stage {
			return
		}
		if seen++; seen == n {
			fmt.Fprintf(cmd.ErrOrStderr(), "mongolog: paused at %s of window %s\n", s, at.Format(time.RFC3339))
			<-cmd.Context().Done()
		}
	}, nil
}

// exportProgress is a progress bar of windows on a terminal, nothing
// elsewhere (the command ends with a summary line).
func exportProgress(w io.Writer) (progress func(done, total int, records int64), finish func()) {
	var bar *progressbar.ProgressBar
	progress = func(done, total int, records int64) {
		if bar == nil && isTerminal(w) {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("exporting"),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond))
		}
		if bar != nil {
			_ = bar.Set(done)
			bar.Describe(fmt.Sprintf("%d records", records))
		}
	}
	finish = func() {
		if bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(w)
		}
	}
	return progress, finish
}
