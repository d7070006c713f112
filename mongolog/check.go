// Package mongolog is the read side of the plugin and the tooling around
// it: what the mongolog command's subcommands do (check, query, follow,
// stats, verify, prune, import), called by its command line (package
// mongolog/cli) and by tests directly.
package mongolog

import (
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
)

// PluginName is the name the plugin registers with Fluent Bit.
const PluginName = "mongodb"

// Check validates every mongodb output of the Fluent Bit configuration at
// path with the plugin's own rules (unknown keys named with the key they
// resemble) and reports to w, with what Fluent Bit does with the keys it
// keeps for itself and warnings of risky defaults (see advise). It returns
// the number of problems found; a configuration without a mongodb output
// is one.
func Check(w io.Writer, path string, env func(string) string) (problems int, err error) {
	secs, err := fbconf.Load(path, env)
	if err != nil {
		return 0, err
	}
	outs := fbconf.Outputs(secs, PluginName)
	if len(outs) == 0 {
		fmt.Fprintf(w, "%s: no [OUTPUT] with Name %s\n", path, PluginName)
		return 1, nil
	}
	var outputs []writes
	for _, o := range outs {
		name := PluginName
		if l := o.Label(); l != "" {
			name += " (" + l + ")"
		}
		var errs []string
		c, err := conf.Parse(o.Props, env, nil)
		if err != nil {
			all := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				all = j.Unwrap()
			}
			for _, e := range all {
				errs = append(errs, e.Error())
			}
		}
		var warnings []string
		if c != nil {
			warnings = append(warnings, exposure(c)...)
			warnings = append(warnings, oldIndexes(c)...)
		}
		for _, n := range advise(o.Props) {
			if n.problem {
				errs = append(errs, n.text)
			} else {
				warnings = append(warnings, n.text)
			}
		}
		if len(errs) == 0 {
			fmt.Fprintf(w, "%s: output %s: ok", o.Where(), name)
			if changed := c.Changed(); changed != "" {
				fmt.Fprintf(w, " (%s)", changed)
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "%s: output %s: %d %s\n", o.Where(), name, len(errs), plural(len(errs), "problem"))
		}
		for _, e := range errs {
			fmt.Fprintf(w, "  %s\n", e)
		}
		for _, t := range warnings {
			fmt.Fprintf(w, "  warning: %s\n", t)
		}
		problems += len(errs)
		if s, ok := writesOf(o, name, c); ok && err == nil {
			outputs = append(outputs, s)
		}
	}
	for _, text := range overlaps(outputs) {
		fmt.Fprintf(w, "warning: %s\n", text)
	}
	return problems, nil
}

// exposure warns of what a valid configuration leaves open: TLS that
// does not verify the server, metrics served on every interface; and of a
// bucket_key that groups nothing: nginx_access's host.
func exposure(c *conf.Config) []string {
	var w []string
	if c.Parser == conf.ParserNginxAccess && slices.Contains(c.BucketKey, "host") {
		w = append(w, "bucket_key host with parser nginx_access: host is the ident field (\"-\" on nearly every line), as Fluent Bit's stock nginx parser names it, "+
			"so every record goes to one bucket per window; the client address is remote")
	}
	if t := conf.InsecureTLS(c.URI); t != "" {
		w = append(w, t)
	}
	if c.MetricsListen != "" && conf.AllInterfaces(c.MetricsListen) {
		_, port, _ := net.SplitHostPort(c.MetricsListen)
		w = append(w, fmt.Sprintf("metrics_listen %s: serves the metrics on every interface of the host, to anyone who can reach port %s; "+
			"write 127.0.0.1:%s to serve this host only", c.MetricsListen, port, port))
	}
	return w
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
