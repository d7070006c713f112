package mongolog

import (
	"fmt"
	"strings"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// note is one thing check says about an output beyond the plugin's own
// validation: a problem fails the check, a warning does not.
type note struct {
	problem bool
	text    string
}

// fbOn is how Fluent Bit reads a boolean property (flb_utils_bool).
func fbOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "yes", "1":
		return true
	}
	return false
}

// certificateKeyFile is the uri option for a client certificate and its
// key, which the driver takes in one file.
func certificateKeyFile(string) string {
	return "put tlsCertificateKeyFile=FILE in the uri, FILE holding the certificate and its key in PEM"
}

// tlsURI maps Fluent Bit's TLS keys to what does the same in the uri. Fluent
// Bit keeps every tls.* key for itself: a Go plugin never sees one.
var tlsURI = map[string]func(v string) string{
	"tls.verify": func(v string) string {
		if fbOn(v) {
			return "the driver verifies the server's certificate already, unless the uri says tlsInsecure=true"
		}
		return "to skip verification put tlsInsecure=true in the uri"
	},
	"tls.verify_hostname": func(v string) string {
		if fbOn(v) {
			return "the driver checks the host name already, unless the uri says tlsAllowInvalidHostnames=true"
		}
		return "put tlsAllowInvalidHostnames=true in the uri"
	},
	"tls.ca_file":     func(v string) string { return "put tlsCAFile=" + v + " in the uri" },
	"tls.ca_path":     func(string) string { return "the driver takes one CA file: put tlsCAFile=FILE in the uri" },
	"tls.crt_file":    certificateKeyFile,
	"tls.key_file":    certificateKeyFile,
	"tls.key_passwd":  func(string) string { return "put tlsCertificateKeyFilePassword=... in the uri (or in uri_file)" },
	"tls.vhost":       func(string) string { return "the server name checked is the uri's host" },
	"tls.min_version": func(string) string { return "the driver uses TLS 1.2 or newer; the uri cannot change that" },
	"tls.max_version": func(string) string { return "the uri cannot set it" },
	"tls.ciphers":     func(string) string { return "the uri cannot set them; the driver uses Go's secure defaults" },
	"tls.debug":       func(string) string { return "the uri cannot set it" },
}

// advise says what Fluent Bit does with the keys of output p that it keeps
// for itself, where a user may believe the plugin uses them, and warns of
// settings that the README advises against leaving as Fluent Bit's default.
func advise(p conf.Map) []note {
	var notes []note
	warn := func(format string, args ...any) { notes = append(notes, note{text: fmt.Sprintf(format, args...)}) }
	uri := "the uri"
	if p.Get("uri") == "" {
		uri = "the connection string (uri_file, uri_env)"
	}
	for _, k := range p.Keys() {
		v := p.Get(k)
		switch {
		case k == "tls" && fbOn(v):
			notes = append(notes, note{problem: true, text: fmt.Sprintf(
				`tls %s: Fluent Bit will not start ("mongodb.N does not support TLS"): Go plugins make their own connections; put tls=true in %s instead (with tlsCAFile=... and tlsCertificateKeyFile=... as needed)`, v, uri)})
		case k == "tls":
			warn("tls %s: not used by the plugin; TLS is on when %s says tls=true", v, uri)
		case strings.HasPrefix(k, "tls."):
			how, ok := tlsURI[k]
			if !ok {
				how = func(string) string { return "TLS is set in the uri (tls=true, tlsCAFile, tlsCertificateKeyFile)" }
			}
			warn("%s %s: not used (Fluent Bit keeps tls.* keys for itself and the plugin never sees them): %s", k, v, how(v))
		case k == "host" || k == "port":
			warn("%s %s: not used (Fluent Bit keeps it for itself and the plugin never sees it): the plugin connects to the hosts in %s; write them there (mongodb://host1:27017,host2:27017/)", k, v, uri)
		case k == "ipv6":
			warn("ipv6 %s: not used: the plugin connects to the hosts in %s as the driver resolves them", v, uri)
		case k == "net.connect_timeout":
			warn("%s %s: not used (Fluent Bit's network settings do not reach the plugin's connections): the plugin's key is connect_timeout", k, v)
		case strings.HasPrefix(k, "net."):
			warn("%s %s: not used (Fluent Bit's network settings do not reach the plugin's connections): the driver's are options of %s (connectTimeoutMS, socketTimeoutMS, maxPoolSize, ...)", k, v, uri)
		case k == "alias" && p.Get("instance_name") == "":
			warn("alias %s: Fluent Bit names the output so in its own lines, but the plugin never sees it: its lines say mongodb.N unless instance_name %s is set too", v, v)
		}
	}
	if p.Get("workers") == "" {
		warn("workers is not set: with Fluent Bit's default of 0 flushes run on the engine thread and a slow MongoDB holds up every input; set Workers 1 or more")
	}
	switch v := strings.ToLower(p.Get("retry_limit")); v {
	case "":
		warn("retry_limit is not set: Fluent Bit retries a chunk once and then drops it; for a database that may be down for minutes set Retry_Limit no_limits (or a large number)")
	case "no_retries":
		warn("retry_limit no_retries: Fluent Bit drops a chunk the first time the database does not take it")
	}
	for _, k := range []string{"database", "collection", "dead_letter_collection"} {
		if v := p.Get(k); strings.Contains(v, "%") {
			warn("%s %s: %% is taken literally (no date formats here); for a collection per day, week or month set partition", k, v)
		}
	}
	return notes
}
