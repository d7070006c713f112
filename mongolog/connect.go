package mongolog

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
)

// Target is where to read: an output section of a Fluent Bit configuration
// (File, and Output to pick one by instance_name or Alias), and plugin keys
// that override it or stand alone (Keys, e.g. uri, database, collection).
type Target struct {
	File, Output string
	Keys         map[string]string
}

// Config resolves t into the plugin's configuration.
func (t Target) Config(env func(string) string) (*conf.Config, error) {
	m, err := t.Map(env)
	if err != nil {
		return nil, err
	}
	return conf.Parse(m, env, nil)
}

// Map is the plugin keys t sets, as Fluent Bit would hand them to the
// plugin.
func (t Target) Map(env func(string) string) (conf.Map, error) {
	m := conf.Map{}
	if t.File != "" {
		secs, err := fbconf.Load(t.File, env)
		if err != nil {
			return nil, err
		}
		outs := fbconf.Outputs(secs, PluginName)
		var pick *fbconf.Section
		for i, o := range outs {
			if t.Output == "" || o.Label() == t.Output {
				pick = &outs[i]
				break
			}
		}
		switch {
		case pick == nil && t.Output != "":
			return nil, fmt.Errorf("%s: no mongodb output named %q (its instance_name or Alias)", t.File, t.Output)
		case pick == nil:
			return nil, fmt.Errorf("%s: no [OUTPUT] with Name mongodb", t.File)
		}
		for _, k := range pick.Props.Keys() {
			if !conf.Reserved(k) {
				m.Set(k, pick.Props.Get(k))
			}
		}
	}
	for k, v := range t.Keys {
		m.Set(k, v)
	}
	if m.Get("uri") == "" && m.Get("uri_file") == "" && m.Get("uri_env") == "" {
		m.Set("uri", "mongodb://127.0.0.1:27017")
	}
	return m, nil
}

// Connect opens cfg's database and checks that the server answers.
func Connect(ctx context.Context, cfg *conf.Config) (*mongo.Database, func(), error) {
	client, err := mongo.Connect(options.Client().ApplyURI(cfg.URI).SetAppName("mongolog").
		SetConnectTimeout(cfg.ConnectTimeout).SetServerSelectionTimeout(cfg.ConnectTimeout))
	if err != nil {
		return nil, nil, fmt.Errorf("uri %s: %v", cfg.Redacted(), err)
	}
	closeFn := func() { _ = client.Disconnect(context.Background()) }
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err := client.Ping(pctx, nil); err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("cannot reach MongoDB at %s within connect_timeout %v: %v (is the server up and the address right?)",
			cfg.Redacted(), cfg.ConnectTimeout, err)
	}
	return client.Database(cfg.Database), closeFn, nil
}

// ParseTime reads a time as a user writes it: RFC 3339, or a UTC date with
// an optional time (2024-06-01, 2024-06-01T10:00, 2024-06-01 10:00:05).
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2024-06-01T10:00:00Z) or a UTC date and time (2024-06-01, 2024-06-01T10:00)", s)
}

// ParseAge reads a duration as the plugin's keys take it (15m, 2h, 7d,
// 1h30m; a plain integer is seconds).
func ParseAge(s string) (time.Duration, error) {
	return conf.ParseDuration(s)
}
