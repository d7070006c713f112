package mongolog

import (
	"context"
	"fmt"
	"strings"
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
	var pick *fbconf.Section
	if t.File != "" {
		var err error
		if pick, err = t.section(env); err != nil {
			return nil, err
		}
	}
	return t.mapOf(pick), nil
}

// mapOf is the plugin keys of the output section pick (nil: none) with
// t.Keys over them.
func (t Target) mapOf(pick *fbconf.Section) conf.Map {
	m := conf.Map{}
	if pick != nil {
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
	return m
}

// section is the output of t.File that t names: the one named t.Output,
// or the only one.
func (t Target) section(env func(string) string) (*fbconf.Section, error) {
	secs, err := fbconf.Load(t.File, env)
	if err != nil {
		return nil, err
	}
	outs := fbconf.Outputs(secs, PluginName)
	var names []string
	for i, o := range outs {
		if t.Output != "" && o.Label() == t.Output {
			return &outs[i], nil
		}
		name := o.Label()
		if name == "" {
			name = "(unnamed: give it an instance_name)"
		}
		names = append(names, fmt.Sprintf("%s at %s", name, o.Where()))
	}
	switch {
	case len(outs) == 0:
		return nil, fmt.Errorf("%s: no [OUTPUT] with Name mongodb", t.File)
	case t.Output != "":
		return nil, fmt.Errorf("%s: no mongodb output named %q (its instance_name or Alias); there are: %s", t.File, t.Output, strings.Join(names, ", "))
	case len(outs) > 1:
		return nil, fmt.Errorf("%s has %d mongodb outputs: pick one with --output NAME (its instance_name or Alias): %s", t.File, len(outs), strings.Join(names, ", "))
	}
	return &outs[0], nil
}

// Tag is a tag the output of t accepts by its Match: the pattern with each
// * written as want (want itself when the output matches every tag or
// there is no file). An output that matches by Match_Regex gets no tag and
// an error: the caller must give one.
func (t Target) Tag(env func(string) string, want string) (string, error) {
	if t.File == "" {
		return want, nil
	}
	s, err := t.section(env)
	if err != nil {
		return "", err
	}
	match := s.Props.Get("match")
	switch {
	case match == "" && s.Props.Get("match_regex") != "":
		return "", fmt.Errorf("the output at %s matches tags by Match_Regex %s: give the tag with --tag", s.Where(), s.Props.Get("match_regex"))
	case match == "" || match == "*":
		return want, nil
	}
	return strings.ReplaceAll(match, "*", want), nil
}

// ServerError is a server that could not be reached or refused what was
// asked (a failed ping, authentication, a command error).
type ServerError struct{ Err error }

func (e *ServerError) Error() string { return e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

// Connect opens cfg's database and checks that the server answers; a
// server that does not is a *ServerError. A URI the driver cannot use is a
// plain error: a configuration error.
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
		return nil, nil, &ServerError{fmt.Errorf("cannot reach MongoDB at %s within connect_timeout %v: %w (is the server up and the address right?)",
			cfg.Redacted(), cfg.ConnectTimeout, err)}
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
