package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
	"github.com/fluent-bit-out-mongodb/out_mongodb/version"
)

func checkCommand(env Env) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "check -c FILE",
		Short: "Validate every mongodb output of a Fluent Bit configuration (classic or YAML) with the plugin's own rules",
		Long: "check reads a Fluent Bit configuration (classic, with @INCLUDE and @SET, or YAML), validates every\n" +
			"[OUTPUT] whose Name is mongodb as the plugin does at start, names unknown keys with the key they\n" +
			"resemble, and exits 1 on any problem (2 when the file cannot be read).",
		Example: "  mongolog check -c /etc/fluent-bit/fluent-bit.conf",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			problems, err := mongolog.Check(cmd.OutOrStdout(), file, env.getenv)
			if err != nil {
				return err
			}
			if problems > 0 {
				return &ProblemsError{N: problems}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "Fluent Bit configuration file")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func verifyCommand(env Env) *cobra.Command {
	var since, from, to, unique string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check stored buckets before they go cold; exit 1 on any problem",
		Long: "verify reads the buckets of a collection (or of --from/--to, across partitions) and checks that count\n" +
			"equals the entries, the entries lie inside the window and inside minTs/maxTs, stats and counts match the\n" +
			"entries, the ops account for every entry and no write's entries appear twice; --unique FIELD also checks\n" +
			"that no two records share FIELD. It prints each problem, naming the bucket, and exits 1 on any. Stats and\n" +
			"counts are checked against the output's stats and count_by: without -c, give them as --stats and --count_by.",
		Example: "  mongolog verify -c fluent-bit.conf --from 2024-06-01 --to 2024-06-02 --unique reqid\n" +
			"  mongolog verify --uri mongodb://db:27017 --bucket_key module --stats cost --count_by level",
		Args: cobra.NoArgs,
	}
	tgt := addTarget(cmd, env, verifyKeys...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var opt mongolog.VerifyOptions
		var err error
		if opt.From, opt.To, err = timeRange(since, from, to); err != nil {
			return err
		}
		opt.Unique = unique
		span, closeFn, err := tgt.span(cmd, nil)
		if err != nil {
			return err
		}
		defer closeFn()
		out := cmd.OutOrStdout()
		problems := 0
		v, err := span.Verify(cmd.Context(), opt, func(p mongolog.Problem) {
			problems++
			fmt.Fprintln(out, p)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%d collections, %d documents, %d records: %d problems\n", v.Collections, v.Docs, v.Records, problems)
		if problems > 0 {
			return &ProblemsError{N: problems}
		}
		return nil
	}
	cmd.Flags().StringVar(&since, "since", "", "only buckets of records of the last duration (15m, 2h, 7d)")
	cmd.Flags().StringVar(&from, "from", "", "only buckets of records at or after this time")
	cmd.Flags().StringVar(&to, "to", "", "only buckets of records before this time")
	cmd.Flags().StringVar(&unique, "unique", "", "a field no two records may share (e.g. a request id)")
	return cmd
}

func statsCommand(env Env) *cobra.Command {
	var since, from, to, step string
	var noChart bool
	cmd := &cobra.Command{
		Use:   "stats [bucket_key field=value ...]",
		Short: "Activity per window from bucket fields alone: records, counts per value, min/avg/max of stats, and a chart",
		Long: "stats sums count, counts and stats of the buckets per window (or per --step, a whole number of windows),\n" +
			"without unpacking entries, and draws records per step by time, a step without records at 0. Conditions\n" +
			"name bucket_key fields only.",
		Example: "  mongolog stats -c fluent-bit.conf --since 1d --step 1h module=pay",
	}
	tgt := addTarget(cmd, env)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		q, err := queryOf(args, since, from, to)
		if err != nil {
			return err
		}
		var d time.Duration
		if step != "" {
			if d, err = mongolog.ParseAge(step); err != nil {
				return fmt.Errorf("--step: %v", err)
			}
		}
		span, closeFn, err := tgt.span(cmd, func(cfg *conf.Config) (err error) {
			d, err = (&mongolog.Reader{Cfg: cfg}).StatsCheck(q, d)
			return err
		})
		if err != nil {
			return err
		}
		defer closeFn()
		windows, err := span.Stats(cmd.Context(), q, d)
		if err != nil {
			return err
		}
		return mongolog.PrintStats(cmd.OutOrStdout(), windows, d, !noChart)
	}
	cmd.Flags().StringVar(&since, "since", "", "only the last duration (15m, 2h, 7d)")
	cmd.Flags().StringVar(&from, "from", "", "from this time")
	cmd.Flags().StringVar(&to, "to", "", "up to this time")
	cmd.Flags().StringVar(&step, "step", "", "sum per this step, a whole number of bucket windows (default: the bucket window)")
	cmd.Flags().BoolVar(&noChart, "no_chart", false, "the table only")
	return cmd
}

func pruneCommand(env Env) *cobra.Command {
	var olderThan string
	var rate int
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older_than AGE [bucket_key field=value ...]",
		Short: "Delete the buckets of a key whose records are all older than an age, in paced batches; --dry_run shows what would go",
		Long: "prune is per-key retention for data already written: it deletes, across partitions and oldest first,\n" +
			"the buckets (flat: the documents) that match the conditions and whose newest record is older than\n" +
			"--older_than, at most --rate documents per second. --dry_run prints each one that would go.",
		Example: "  mongolog prune -c fluent-bit.conf --older_than 30d --dry_run device=abc123",
	}
	tgt := addTarget(cmd, env)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if olderThan == "" {
			return fmt.Errorf("--older_than is required: prune deletes nothing without an age")
		}
		age, err := mongolog.ParseAge(olderThan)
		if err != nil {
			return fmt.Errorf("--older_than: %v", err)
		}
		opt := mongolog.PruneOptions{Before: time.Now().Add(-age), Rate: rate, DryRun: dryRun}
		if opt.Conds, err = mongolog.ParseConds(args); err != nil {
			return err
		}
		span, closeFn, err := tgt.span(cmd, func(cfg *conf.Config) error {
			_, err := (&mongolog.Reader{Cfg: cfg}).PruneFilter(opt)
			return err
		})
		if err != nil {
			return err
		}
		defer closeFn()
		out := cmd.OutOrStdout()
		p, err := span.Prune(cmd.Context(), opt, func(s string) { fmt.Fprintln(out, s) })
		verb := "deleted"
		if dryRun {
			verb = "would delete"
		}
		if err == nil || p.Docs > 0 {
			fmt.Fprintf(out, "%s %d documents holding %d records\n", verb, p.Docs, p.Records)
		}
		return err
	}
	cmd.Flags().StringVar(&olderThan, "older_than", "", "delete what is wholly older than this age (30d, 12h)")
	cmd.Flags().IntVar(&rate, "rate", 5000, "documents deleted per second at most")
	cmd.Flags().BoolVar(&dryRun, "dry_run", false, "print what would be deleted, delete nothing")
	return cmd
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print mongolog's version, the Go release and the platform it was built for",
		Long:    "version prints the version mongolog was built from (the same as the plugin's of one release), the Go\nrelease and the platform: `mongolog v1.2.0 (go1.26.8, linux/arm64)`.",
		Example: "  mongolog version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "mongolog "+version.String())
			return nil
		},
	}
}
