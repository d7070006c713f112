package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

func importCommand(env Env) *cobra.Command {
	var tag string
	var lines int
	cmd := &cobra.Command{
		Use:   "import [flags] FILE|GLOB|- ...",
		Short: "Store log files (globs, .gz, - for stdin) through the plugin's own pipeline, exactly once when run again",
		Long: "import sends each line of the files, as the record {log: line}, through the plugin's pipeline with the\n" +
			"keys of a Fluent Bit output (-c) or of the flags (every plugin key is one, e.g. --parser apache_combined\n" +
			"--time_from_log on). A record's time is its file's modification time, or with a parser and time_from_log\n" +
			"the time in the line. The chunks are the same on every run over unchanged files: a run interrupted\n" +
			"(Ctrl-C stops between chunks) and started again stores every line exactly once. A server that does not\n" +
			"answer at the start ends the import (exit 3); one that goes away later is waited for, each chunk retried.",
		Example: "  mongolog import --collection access --parser apache_combined --time_from_log on '/var/log/apache2/access.log*'\n" +
			"  zcat old.log.gz | mongolog import -c fluent-bit.conf -",
		Args: cobra.MinimumNArgs(1),
	}
	var all []string
	for _, k := range conf.Keys() {
		all = append(all, k.Key)
	}
	tgt := addTarget(cmd, env, all...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		target := tgt.resolved(cmd)
		m, err := target.Map(env.getenv)
		if err != nil {
			return err
		}
		if m.Get("plugin_log_level") == "" {
			m.Set("plugin_log_level", "warn")
		}
		cfg, err := conf.Parse(m, env.getenv, nil)
		if err != nil {
			return err
		}
		stderr := cmd.ErrOrStderr()
		if !cmd.Flags().Changed("tag") {
			if tag, err = target.Tag(env.getenv, "import"); err != nil {
				return err
			}
			if target.File != "" {
				fmt.Fprintf(stderr, "tag %s (one the output's Match accepts; --tag sets another)\n", tag)
			}
		}
		if err := mongolog.CheckPaths(args); err != nil {
			return err
		}
		_, closeFn, err := mongolog.Connect(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		closeFn()
		in, err := instance.NewWith(m, "import", stderr, instance.Seams{Getenv: env.getenv})
		if err != nil {
			return err
		}
		start := time.Now()
		progress, finish := importProgress(stderr, start)
		res, err := mongolog.Import(cmd.Context(), in, mongolog.ImportOptions{Paths: args, Tag: tag, ChunkLines: lines, Progress: progress, Stdin: env.Stdin})
		in.Exit()
		finish()
		fmt.Fprintf(cmd.OutOrStdout(), "imported %d records from %d files in %d chunks (%d retries) in %v: %d stored, %d already there, %d parked\n",
			res.Records, res.Files, res.Chunks, res.Retries, time.Since(start).Round(time.Millisecond), res.Stored, res.Found, res.Parked)
		if errors.Is(err, context.Canceled) {
			return &InterruptedError{Next: "run the same import again to go on; nothing is stored twice"}
		}
		return err
	}
	cmd.Flags().StringVar(&tag, "tag", "", "the records' tag (default: import; with -c, import put in the output's Match, as app.import for app.*)")
	cmd.Flags().IntVar(&lines, "chunk_lines", 1000, "lines per chunk")
	return cmd
}

// importProgress is a progress bar on a terminal, a line every 5 seconds
// elsewhere, written to w; finish ends the bar.
func importProgress(out io.Writer, start time.Time) (progress func(read, total, records int64), finish func()) {
	var bar *progressbar.ProgressBar
	last := time.Now()
	progress = func(read, total, records int64) {
		if bar == nil && isTerminal(out) && total > 0 {
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(out), progressbar.OptionShowBytes(true),
				progressbar.OptionSetDescription("importing"), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond))
		}
		if bar != nil {
			_ = bar.Set64(read)
			bar.Describe(fmt.Sprintf("%d records, %.0f/s", records, float64(records)/time.Since(start).Seconds()))
			return
		}
		if time.Since(last) >= 5*time.Second {
			fmt.Fprintf(out, "imported %d records (%d of %d bytes), %.0f records/s\n", records, read, total,
				float64(records)/time.Since(start).Seconds())
			last = time.Now()
		}
	}
	finish = func() {
		if bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(out)
		}
	}
	return progress, finish
}
