package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// goneFlags are flags mongolog no longer takes, with the one that replaced
// them: giving one is an error that says so, not a silent change of output.
var goneFlags = []struct{ name, instead string }{
	{"raw", "--format raw"},
	{"table", "--format table"},
}

func queryCommand(env Env) *cobra.Command {
	var since, from, to, format, lagFlag string
	var limit int
	var follow bool
	cmd := &cobra.Command{
		Use:   "query [field=value | field!=value | field>n | field>=n | field<n | field<=n | field~regex ...]",
		Short: "Print the records that match, in time order, out of buckets (or flat documents), across partitions",
		Long: "query prints the records that meet every condition, oldest first. Conditions on bucket_key fields\n" +
			"and the time range select buckets through their key, start, minTs and maxTs; the server unpacks them\n" +
			"and filters the entries. A number matches its text too (code=500 finds 500 and \"500\").",
		Example: "  mongolog query -c fluent-bit.conf --since 15m module=pay level=error\n" +
			"  mongolog query --collection app --bucket_key module --from 2024-06-01 'cost>500' --format table\n" +
			"  mongolog query -c fluent-bit.conf -f host=web1 --format raw",
	}
	tgt := addTarget(cmd, env, append(slices.Clone(targetKeys), "parse_key")...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		for _, g := range goneFlags {
			if cmd.Flags().Changed(g.name) {
				return fmt.Errorf("--%s is gone: use %s", g.name, g.instead)
			}
		}
		q, err := queryOf(args, since, from, to)
		if err != nil {
			return err
		}
		q.Limit = limit
		if !slices.Contains(mongolog.Formats, format) {
			return fmt.Errorf("--format %q: want one of %s", format, strings.Join(mongolog.Formats, ", "))
		}
		var lag time.Duration
		span, closeFn, err := tgt.span(cmd, func(cfg *conf.Config) (err error) {
			if follow {
				lag, err = followLag(cmd, env, lagFlag, tgt.file, cfg)
			}
			return err
		})
		if err != nil {
			return err
		}
		defer closeFn()
		p := &mongolog.Printer{W: cmd.OutOrStdout(), Format: format, TimeKey: span.Cfg.TimeKey, RawKey: span.Cfg.ParseKey, Note: cmd.ErrOrStderr()}
		if follow {
			return followSpan(cmd, span, q, lag, p)
		}
		return runQuery(cmd, span, q, p)
	}
	cmd.Flags().StringVar(&since, "since", "", "only records of the last duration (15m, 2h, 7d)")
	cmd.Flags().StringVar(&from, "from", "", "only records at or after this time (2024-06-01T10:00, RFC 3339; UTC)")
	cmd.Flags().StringVar(&to, "to", "", "only records before this time")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many records (0: all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new records as they land, like tail -f")
	cmd.Flags().StringVar(&lagFlag, "lag", "", "with --follow: how far behind the newest record printed to look for records that land late\n"+
		"(default: the [SERVICE] Flush of -c FILE, 1s without one, plus flush_timeout)")
	cmd.Flags().StringVar(&format, "format", "json", "json (JSON lines), table, or raw (the parse_key field of records stored unparsed;\n"+
		"others as JSON lines, said once on stderr)")
	for _, g := range goneFlags {
		cmd.Flags().Bool(g.name, false, "gone: "+g.instead)
		_ = cmd.Flags().MarkHidden(g.name)
	}
	return cmd
}

// runQuery prints the records of q in span, each with its target when the
// span names them.
func runQuery(cmd *cobra.Command, span *mongolog.Span, q mongolog.Query, p *mongolog.Printer) error {
	n := 0
	err := span.Query(cmd.Context(), q, func(at mongolog.Place, rec bson.Raw) error {
		n++
		if span.Named {
			rec = mongolog.Placed(rec, at)
		}
		return p.Print(rec)
	})
	if err != nil {
		return err
	}
	if err := p.Flush(); err != nil {
		return err
	}
	if n == 0 && len(q.Conds) > 0 {
		return unknownFields(cmd, span, q)
	}
	return nil
}

// followSpan follows every target of span (see mongolog.Span.Follow).
func followSpan(cmd *cobra.Command, span *mongolog.Span, q mongolog.Query, lag time.Duration, p *mongolog.Printer) error {
	return span.Follow(cmd.Context(), q, time.Second, lag, func(at mongolog.Place, rec bson.Raw) error {
		if span.Named {
			rec = mongolog.Placed(rec, at)
		}
		if err := p.Print(rec); err != nil {
			return err
		}
		return p.Flush()
	})
}

// unknownFields explains a query that matched nothing by the fields its
// conditions name that no record of the range has, if any.
func unknownFields(cmd *cobra.Command, span *mongolog.Span, q mongolog.Query) error {
	unknown, seen, err := span.UnknownFields(cmd.Context(), q)
	if err == nil && len(unknown) > 0 {
		return fmt.Errorf("no record matches, and none of the records of the range has %s; the records have: %s",
			strings.Join(unknown, ", "), strings.Join(seen, ", "))
	}
	return nil
}

// followLag is --lag, or the default of the target's configuration.
func followLag(cmd *cobra.Command, env Env, flag, file string, cfg *conf.Config) (time.Duration, error) {
	if !cmd.Flags().Changed("lag") {
		return mongolog.DefaultLag(file, cfg, env.getenv)
	}
	lag, err := mongolog.ParseAge(flag)
	if err != nil {
		return 0, fmt.Errorf("--lag: %v", err)
	}
	return lag, nil
}
