package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// doctorKeys are the plugin keys doctor takes as flags, beside the
// target's. --ttl is the plugin's ttl, as in every command; --new_ttl asks
// what a change of ttl would do.
var doctorKeys = append(slices.Clone(targetKeys), "ttl", "dead_letter_collection", "dead_letter_ttl", "partition_keep",
	"ttl_burst_limit", "ttl_delete_rate", "create_indexes", "indexes")

func doctorCommand(env Env) *cobra.Command {
	var format, interval, newTTL, pluginTTL, backlogWait string
	var asJSON, verbose bool
	var ratio float64
	var spaceMin int64
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check retention where every mongodb output writes: TTL indexes, expiry fields, the TTL monitor, backlog, partitions, indexes, space",
		Long: "doctor checks every collection, partition and dead-letter collection of every mongodb output of -c FILE (or\n" +
			"the one --output names, or the flags' target): the TTL indexes on expireAt and parkedAt against ttl and\n" +
			"dead_letter_ttl, documents whose expiry field is missing or not a date, the server's TTL monitor (on, its\n" +
			"interval, its passes over --interval), documents past their expiry by more than two monitor passes and\n" +
			"still there after its next two (--backlog_wait: a backlog, not old lines imported just now),\n" +
			"partitions older than partition_keep, the indexes the plugin creates, and storage not returned after\n" +
			"deletes. --new_ttl D says what a change of ttl to D would expire at once and whether the plugin spreads it.\n" +
			"One line per finding with what to do (ok lines with -v); --format json prints every finding, ok ones included,\n" +
			"as one JSON object a line: check, target, severity, message, advice, numbers. Exit 1 on a problem.",
		Example: "  mongolog doctor -c fluent-bit.conf\n" +
			"  mongolog doctor --uri mongodb://db:27017 --collection app --ttl 7d --new_ttl 1d --format json",
		Args: cobra.NoArgs,
	}
	tgt := addTarget(cmd, env, doctorKeys...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if asJSON {
			fmt.Fprintln(cmd.ErrOrStderr(), "mongolog: doctor --json is --format json; --json will go")
			format = "json"
		}
		if format != "text" && format != "json" {
			return fmt.Errorf("--format %q: want text or json", format)
		}
		var opt mongolog.DoctorOptions
		var err error
		if opt.Interval, err = mongolog.ParseAge(interval); err != nil {
			return fmt.Errorf("--interval: %v", err)
		}
		if err := renamedTTL(cmd); err != nil {
			return err
		}
		if newTTL != "" {
			if opt.TTL, err = mongolog.ParseAge(newTTL); err != nil || opt.TTL < time.Second {
				return fmt.Errorf("--new_ttl %q: want a duration of 1s or more, as the ttl key takes it (1d, 12h)", newTTL)
			}
		}
		switch backlogWait {
		case "auto":
		case "0", "off":
			opt.BacklogWait = -1
		default:
			if opt.BacklogWait, err = mongolog.ParseAge(backlogWait); err != nil || opt.BacklogWait <= 0 {
				return fmt.Errorf("--backlog_wait %q: want auto, 0 (no wait) or a duration (3m)", backlogWait)
			}
		}
		if ratio <= 0 || spaceMin < 0 {
			return fmt.Errorf("--space_ratio %g, --space_min_mib %d: want a ratio above 0 and a size of 0 or more", ratio, spaceMin)
		}
		opt.SpaceRatio, opt.SpaceMin = ratio, spaceMin<<20
		target, sel, err := tgt.split(cmd)
		if err != nil {
			return err
		}
		outs, err := target.Outputs(env.getenv)
		if err != nil {
			return err
		}
		return runDoctor(cmd, outs, sel, opt, format, verbose)
	}
	cmd.Flags().StringVar(&format, "format", "text", "text (a line per finding) or json (a JSON object per finding, ok ones included)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "the same as --format json")
	_ = cmd.Flags().MarkHidden("json")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "text: also the checks that passed")
	cmd.Flags().StringVar(&interval, "interval", "5s", "time between the two reads of the TTL monitor's passes")
	cmd.Flags().StringVar(&backlogWait, "backlog_wait", "auto", "the most to wait for the TTL monitor's next two passes before documents past their expiry are a backlog (auto: 3 of its intervals; 0: no wait)")
	cmd.Flags().StringVar(&newTTL, "new_ttl", "", "what a change of ttl to this duration would expire at once")
	cmd.Flags().StringVar(&pluginTTL, "plugin_ttl", "", "the plugin's ttl: --ttl")
	_ = cmd.Flags().MarkHidden("plugin_ttl")
	cmd.Flags().Float64Var(&ratio, "space_ratio", 2, "storageSize above this many times dataSize is space not returned")
	cmd.Flags().Int64Var(&spaceMin, "space_min_mib", 64, "and at least this many MiB more")
	return cmd
}

// renamedTTL says what became of doctor's ttl flags: --ttl is the plugin's
// ttl, as in every command, where it used to ask what a change of ttl
// would do (now --new_ttl), and --plugin_ttl, the plugin's ttl before, is
// --ttl. A run with both old flags is refused: its --ttl meant the other
// thing. --ttl alone, without --new_ttl, says so on stderr once.
func renamedTTL(cmd *cobra.Command) error {
	f := cmd.Flags()
	stderr := cmd.ErrOrStderr()
	switch {
	case f.Changed("plugin_ttl") && f.Changed("ttl"):
		return fmt.Errorf("--plugin_ttl and --ttl: --ttl is now the plugin's ttl (--plugin_ttl's old meaning), and what a change of ttl would expire is --new_ttl: " +
			"give --ttl <the plugin's> --new_ttl <the change>")
	case f.Changed("plugin_ttl"):
		fmt.Fprintln(stderr, "mongolog: doctor --plugin_ttl is --ttl (the plugin's ttl, as in every command); --plugin_ttl will go")
		v, _ := f.GetString("plugin_ttl")
		return f.Set("ttl", v)
	case f.Changed("ttl") && !f.Changed("new_ttl"):
		fmt.Fprintln(stderr, "mongolog: doctor --ttl is the plugin's ttl (as in every command); what a change of ttl would expire is --new_ttl")
	}
	return nil
}

// runDoctor checks each output, printing each finding as it comes.
func runDoctor(cmd *cobra.Command, outs []mongolog.Output, sel mongolog.Select, opt mongolog.DoctorOptions, format string, verbose bool) error {
	out := cmd.OutOrStdout()
	counts := map[string]int{}
	enc := json.NewEncoder(out)
	d := &mongolog.Doctor{Opt: opt, Report: func(f mongolog.Finding) {
		counts[f.Severity]++
		switch {
		case format == "json":
			_ = enc.Encode(f)
		case f.Severity != mongolog.SevOK || verbose:
			fmt.Fprintln(out, f)
		}
	}}
	for _, o := range outs {
		err := func() error {
			db, closeFn, err := mongolog.Connect(cmd.Context(), o.Cfg)
			if err != nil {
				return err
			}
			defer closeFn()
			rs, err := doctorReaders(cmd, &mongolog.Reader{DB: db, Cfg: o.Cfg}, sel)
			if err != nil {
				return err
			}
			for _, r := range rs {
				if err := d.Check(cmd.Context(), r); err != nil {
					return err
				}
			}
			return d.Finish(cmd.Context())
		}()
		if err != nil {
			if o.Name != "" {
				return fmt.Errorf("output %s: %w", o.Name, err)
			}
			return err
		}
	}
	if format == "text" {
		fmt.Fprintf(out, "%d outputs: %d problems, %d warnings, %d notes, %d checks passed\n", len(outs),
			counts[mongolog.SevProblem], counts[mongolog.SevWarning], counts[mongolog.SevInfo], counts[mongolog.SevOK])
	}
	if n := counts[mongolog.SevProblem]; n > 0 {
		return &ProblemsError{N: n}
	}
	return nil
}

// doctorReaders are the targets of r's output that doctor checks: the
// output itself when static and not narrowed by sel, else every target
// sel leaves (see mongolog.Span), each of whose dead-letter collection the
// names must tell.
func doctorReaders(cmd *cobra.Command, r *mongolog.Reader, sel mongolog.Select) ([]*mongolog.Reader, error) {
	span, err := r.Span(cmd.Context(), sel)
	if err != nil {
		return nil, err
	}
	if err := span.None("doctor"); err != nil {
		return nil, err
	}
	for _, one := range span.Readers {
		if one.Cfg.DeadLetterCollection == "" {
			return nil, fmt.Errorf("doctor: the dead-letter collection of %s is not told by its name (dead_letter_collection %s): give it with --dead_letter_collection",
				one.Place(), r.Cfg.DeadLetterCollection)
		}
	}
	return span.Readers, nil
}
