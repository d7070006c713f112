package conf

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

const (
	schemeMongoDB = "mongodb://"
	schemeSRV     = "mongodb+srv://"
	redactedText  = "xxxxx"
)

// RedactURI returns uri with the password (and option values that may hold
// secrets, such as tlsCertificateKeyFilePassword) replaced by xxxxx. It never
// fails and is safe on malformed input: when it cannot tell where the user
// information ends it hides too much rather than too little.
func RedactURI(uri string) string {
	prefix, rest := "", uri
	if i := strings.Index(uri, "://"); i >= 0 {
		prefix, rest = uri[:i+3], uri[i+3:]
	}
	// The user information ends at the last '@': an unescaped '@', '/' or '?'
	// inside a password then still ends up on the hidden side. The password
	// starts after the first ':' or, in user@pass@host (':' mistyped as an
	// unescaped '@'), after the first '@'.
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user := rest[:at]
		if c := strings.IndexAny(user, ":@"); c >= 0 {
			user = user[:c+1] + redactedText
		}
		return prefix + user + "@" + redactOptions(rest[at+1:])
	}
	return prefix + redactOptions(rest)
}

// RedactText is s with every connection string in it redacted as
// RedactURI does: each run of text holding "://" up to the next space or
// quote character, such as a configuration line quoted in an error.
func RedactText(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := strings.LastIndexAny(s[:i], textEnds) + 1
		end := len(s)
		if j := strings.IndexAny(s[i:], textEnds); j >= 0 {
			end = i + j
		}
		b.WriteString(s[:start])
		b.WriteString(RedactURI(s[start:end]))
		s = s[end:]
	}
}

// textEnds are the bytes that end a connection string within text.
const textEnds = " \t\r\n\"'`"

// redactOptions hides the values of secret-looking options after '?'.
func redactOptions(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	opts := strings.Split(s[q+1:], "&")
	for i, kv := range opts {
		k, _, hasValue := strings.Cut(kv, "=")
		if hasValue && secretOption(k) {
			opts[i] = k + "=" + redactedText
		}
	}
	return s[:q+1] + strings.Join(opts, "&")
}

// WithoutCredentials is uri with its user information (user name and
// password) and the values of secret-looking options removed: what names
// the placement (scheme, hosts, database, the other options) without
// anything that would let someone who sees it test a password guess. A
// uri without credentials is returned unchanged.
func WithoutCredentials(uri string) string {
	prefix, rest := "", uri
	if i := strings.Index(uri, "://"); i >= 0 {
		prefix, rest = uri[:i+3], uri[i+3:]
	}
	// In a valid uri the user information ends at the last '@' before
	// the first '/' or '?' (checkUserInfo refuses them unescaped).
	hostInfo := rest
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hostInfo = rest[:i]
	}
	if at := strings.LastIndexByte(hostInfo, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return prefix + rest
	}
	var kept []string
	for _, kv := range strings.Split(rest[q+1:], "&") {
		if k, _, _ := strings.Cut(kv, "="); !secretOption(k) {
			kept = append(kept, kv)
		}
	}
	return prefix + rest[:q+1] + strings.Join(kept, "&")
}

// insecureOptions are the uri options that turn off a check of the
// server's TLS certificate, lower-cased (the driver reads option names
// in any case).
var insecureOptions = []string{"tlsinsecure", "tlsallowinvalidcertificates", "tlsallowinvalidhostnames"}

// InsecureTLS is a warning when uri turns off the verification of the
// server's certificate or host name (tlsInsecure, tlsAllowInvalidCertificates
// or tlsAllowInvalidHostnames set true), naming the options as written;
// "" when it does not.
func InsecureTLS(uri string) string {
	q := strings.IndexByte(uri, '?')
	if q < 0 {
		return ""
	}
	var on []string
	for _, kv := range strings.Split(uri[q+1:], "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		if slices.Contains(insecureOptions, strings.ToLower(k)) && strings.EqualFold(v, "true") {
			on = append(on, k+"="+v)
		}
	}
	if len(on) == 0 {
		return ""
	}
	return "the uri says " + strings.Join(on, " and ") + ": TLS does not verify the server, so anyone on the network path can pose as it " +
		"and read the records and the credentials; give the server's CA with tlsCAFile=FILE instead"
}

func secretOption(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "secret") ||
		strings.Contains(n, "token") || n == "authmechanismproperties"
}

// checkURI validates a MongoDB connection string without connecting and
// without resolving anything. It returns "" when uri is valid, otherwise a
// reason that never quotes any part of uri (the caller shows the redacted form).
//
// net/url.Parse is not used on the whole string: it rejects valid MongoDB
// forms (several hosts with ports, percent-encoded Unix socket paths) and its
// errors quote the input, password included. The parts are checked with
// net/url's unescaping and query helpers instead.
func checkURI(uri string) string {
	for _, r := range uri {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "must not contain spaces or control characters (percent-encode them)"
		}
	}
	var rest string
	srv := false
	switch {
	case strings.HasPrefix(uri, schemeMongoDB):
		rest = uri[len(schemeMongoDB):]
	case strings.HasPrefix(uri, schemeSRV):
		rest, srv = uri[len(schemeSRV):], true
	default:
		return "must start with mongodb:// or mongodb+srv://"
	}

	// Connection string spec: the host information ends at the first '/';
	// the options start at '?'.
	hostInfo, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hostInfo, tail = rest[:i], rest[i:]
	}
	if at := strings.LastIndexByte(hostInfo, '@'); at >= 0 {
		if why := checkUserInfo(hostInfo[:at]); why != "" {
			return why
		}
		hostInfo = hostInfo[at+1:]
	}
	if hostInfo == "" {
		return "has no host"
	}
	hosts := strings.Split(hostInfo, ",")
	if srv && len(hosts) != 1 {
		return "mongodb+srv:// takes exactly one host name"
	}
	for i, h := range hosts {
		where := "the host"
		if len(hosts) > 1 {
			where = "host " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(hosts))
		}
		if why := checkHost(h, srv); why != "" {
			return where + " " + why
		}
	}

	if strings.HasPrefix(tail, "/") {
		db := tail[1:]
		if q := strings.IndexByte(db, '?'); q >= 0 {
			db, tail = db[:q], db[q:]
		} else {
			tail = ""
		}
		if _, err := url.PathUnescape(db); err != nil {
			return "has a malformed percent-escape in the database name"
		}
	}
	if strings.HasPrefix(tail, "?") {
		opts, err := url.ParseQuery(tail[1:])
		if err != nil {
			return "has malformed options after '?' (name=value pairs joined by &, percent-encoded)"
		}
		for k := range opts {
			if k == "" {
				return "has an option without a name after '?'"
			}
		}
	}
	return ""
}

func checkUserInfo(ui string) string {
	const hint = "; percent-encode the user name and password (@ : / ? # [ ] % become %XX)"
	if ui == "" {
		return "has an empty user name before '@'" + hint
	}
	user, pass, hasPass := strings.Cut(ui, ":")
	if user == "" {
		return "has an empty user name" + hint
	}
	if strings.ContainsAny(ui, "@/?#[]") || (hasPass && strings.Contains(pass, ":")) {
		return "has unescaped special characters in the user name or password" + hint
	}
	if _, err := url.PathUnescape(user); err != nil {
		return "has a malformed percent-escape in the user name" + hint
	}
	if _, err := url.PathUnescape(pass); err != nil {
		return "has a malformed percent-escape in the password" + hint
	}
	return ""
}

// checkHost checks one entry of the host list: name, IPv4, [IPv6] or a
// percent-encoded Unix socket path, each with an optional port (no port for
// mongodb+srv://). The reason never quotes the host.
func checkHost(h string, srv bool) string {
	if h == "" {
		return "is empty"
	}
	name, port := h, ""
	hasPort := false
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "has '[' without ']' (IPv6 addresses are written [::1]:27017)"
		}
		name = h[1:end]
		after := h[end+1:]
		if after != "" {
			if !strings.HasPrefix(after, ":") {
				return "has text after ']' that is not a :port"
			}
			port, hasPort = after[1:], true
		}
		addr, zone, hasZone := strings.Cut(name, "%25") // [fe80::1%25eth0]
		if addr == "" || strings.Trim(addr, "0123456789abcdefABCDEF:.") != "" || !strings.Contains(addr, ":") ||
			(hasZone && (zone == "" || strings.ContainsAny(zone, "%[]"))) {
			return "is not a valid IPv6 address"
		}
	} else {
		if strings.Count(h, ":") > 1 {
			return "has more than one ':' (write IPv6 addresses in brackets: [::1]:27017)"
		}
		if i := strings.IndexByte(h, ':'); i >= 0 {
			name, port, hasPort = h[:i], h[i+1:], true
		}
		if name == "" {
			return "has no name before the port"
		}
		if strings.ContainsAny(name, "/?#@[]\\") {
			return "contains characters that are not allowed in a host name"
		}
		if strings.Contains(name, "%") {
			path, err := url.PathUnescape(name)
			if err != nil {
				return "has a malformed percent-escape"
			}
			if srv || !strings.HasSuffix(path, ".sock") {
				return "is percent-encoded but is not a Unix socket path ending in .sock"
			}
		}
	}
	if hasPort {
		if srv {
			return "has a port, which mongodb+srv:// does not allow (the port comes from DNS)"
		}
		n, why := parseInt(port)
		if why != "" || n < 1 || n > 65535 {
			return "has an invalid port (must be 1-65535)"
		}
	}
	return ""
}

// Hosts is the host list of uri as written (host:port, comma-separated;
// for mongodb+srv:// the service's name), without its scheme, user
// information, database or options: what a log line names the server by.
func Hosts(uri string) string {
	rest := WithoutCredentials(uri)
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
