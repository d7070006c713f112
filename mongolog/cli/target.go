package cli

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// targetKeys are the plugin keys the read commands take as flags.
var targetKeys = []string{"uri", "uri_file", "uri_env", "database", "collection", "mode", "bucket_key", "bucket_window",
	"partition", "time_key", "tag_key", "key_replace_dot", "key_replace_dollar", "connect_timeout"}

// verifyKeys are targetKeys and stats and count_by, which the commands
// that verify buckets (verify, export) compare the buckets' summaries
// with: without -c they come from these flags.
var verifyKeys = append(append([]string(nil), targetKeys...), "stats", "count_by")

// target is where a command reads or writes: -c FILE [--output NAME] and
// plugin keys as flags.
type target struct {
	env          Env
	file, output string
	keys         map[string]*string
}

// addTarget adds -c, --output and the plugin keys (targetKeys when none are
// given) to cmd's flags.
func addTarget(cmd *cobra.Command, env Env, keys ...string) *target {
	if len(keys) == 0 {
		keys = targetKeys
	}
	t := &target{env: env, keys: map[string]*string{}}
	cmd.Flags().StringVarP(&t.file, "config", "c", "", "Fluent Bit configuration whose mongodb output says where to read")
	cmd.Flags().StringVar(&t.output, "output", "", "with -c: the mongodb output of this instance_name or Alias (needed when there are several)")
	for _, k := range keys {
		def := ""
		for _, d := range conf.Keys() {
			if d.Key == k {
				def = d.Default
			}
		}
		help := "the plugin's " + k + " (default " + strings.TrimSpace(def+" as the plugin") + ")"
		if slices.Contains(selectKeys, k) {
			help += ";\na glob (app_*, path.Match syntax) reads the " + k + "s it matches, and with a templated " + k +
				"\nit or a name narrows the read to the matching targets"
		}
		t.keys[k] = cmd.Flags().String(k, "", help)
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

// selectKeys are the keys whose flags also narrow the targets of a read
// (see split).
var selectKeys = []string{"database", "collection"}

// split is the target with the flags given, and the Select that
// --database and --collection make: a glob (k8s_*) always selects, and so
// does a plain name when the output's own value of the key is a template
// (it picks one of the targets); any other value, a template or a name
// of a static output, sets the key as it always has.
func (t *target) split(cmd *cobra.Command) (mongolog.Target, mongolog.Select, error) {
	tg := t.resolved(cmd)
	var sel mongolog.Select
	for _, k := range selectKeys {
		v, ok := tg.Keys[k]
		if !ok || strings.Contains(v, "$") {
			continue
		}
		if !mongolog.IsGlob(v) {
			own := mongolog.Target{File: tg.File, Output: tg.Output, Keys: maps.Clone(tg.Keys)}
			delete(own.Keys, k)
			m, err := own.Map(t.env.getenv)
			if err != nil || !strings.Contains(m.Get(k), "$") {
				continue // a static output: the flag names it (an error comes again from Config)
			}
		}
		delete(tg.Keys, k)
		if k == "database" {
			sel.Database = v
		} else {
			sel.Collection = v
		}
	}
	return tg, sel, sel.Check()
}

// span connects to the targets t names once check, if given, passes their
// configuration: usage errors come before any I/O. The caller closes the
// connection with the function returned.
func (t *target) span(cmd *cobra.Command, check func(*conf.Config) error) (*mongolog.Span, func(), error) {
	tg, sel, err := t.split(cmd)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := tg.Config(t.env.getenv)
	if err != nil {
		return nil, nil, err
	}
	if check != nil {
		if err := check(cfg); err != nil {
			return nil, nil, err
		}
	}
	db, closeFn, err := mongolog.Connect(cmd.Context(), cfg)
	if err != nil {
		return nil, nil, err
	}
	s, err := (&mongolog.Reader{DB: db, Cfg: cfg}).Span(cmd.Context(), sel)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return s, closeFn, nil
}

// queryOf is the query of a read command's conditions and time flags.
func queryOf(args []string, since, from, to string) (mongolog.Query, error) {
	var q mongolog.Query
	var err error
	if q.Conds, err = mongolog.ParseConds(args); err != nil {
		return q, err
	}
	q.From, q.To, err = timeRange(since, from, to)
	return q, err
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

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
