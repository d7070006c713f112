package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/mongo"

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

// open connects to what t names once check, if given, passes its
// configuration: usage errors come before any I/O. The caller closes the
// connection with the function returned.
func (t *target) open(cmd *cobra.Command, check func(*conf.Config) error) (*conf.Config, *mongo.Database, func(), error) {
	cfg, err := t.resolved(cmd).Config(t.env.getenv)
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
