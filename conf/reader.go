package conf

// Reading one key: its raw value, and each kind of value (names, enums,
// numbers, durations, sizes, the uri and its sources, regexes, formats)
// checked as it is read, a problem recorded against the key.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// reader reads keys from a Getter and collects errors.
type reader struct {
	g    Getter
	errs []error
	set  map[string]string // keys the user gave, with their trimmed value
	bad  map[string]bool   // keys whose value was rejected
	// parsed are the templates parsed as their keys were read (by key),
	// kept for targets so that each is parsed once.
	parsed map[string]*naming.Template
}

// raw returns the trimmed value of key, or its default from the key table
// when unset; set reports whether the user gave it.
func (r *reader) raw(key string) (value string, set bool) {
	d, ok := lookupKey(key)
	if !ok {
		r.errs = append(r.errs, &Error{Key: key, Reason: "internal error: key missing from the key table", NoValue: true})
		return "", false
	}
	v := strings.TrimSpace(r.g.Get(key))
	if v == "" {
		return d.Default, false
	}
	r.set[key] = v
	return v, true
}

// invalid records `<key>: invalid value "<value>": <reason>`. A value that
// may be a connection string is redacted.
func (r *reader) invalid(key, value, reason string) {
	if key == "uri" || strings.Contains(value, "://") ||
		(strings.HasPrefix(key, "uri_") && strings.Contains(value, "@")) {
		value = RedactURI(value)
	}
	r.bad[key] = true
	r.errs = append(r.errs, &Error{Key: key, Value: value, Reason: reason})
}

// check records an error when why is not empty and reports whether the value is good.
func (r *reader) check(key, value, why string) bool {
	if why != "" {
		r.invalid(key, value, why)
		return false
	}
	return true
}

func (r *reader) name(key string, valid func(string) string) string {
	v, _ := r.raw(key)
	if !r.check(key, v, valid(v)) {
		return ""
	}
	return v
}

func (r *reader) enum(key string, allowed ...string) string {
	v, _ := r.raw(key)
	l := strings.ToLower(v)
	if slices.Contains(allowed, l) {
		return l
	}
	r.invalid(key, v, "must be one of "+strings.Join(allowed, ", "))
	return ""
}

func (r *reader) boolean(key string) bool {
	v, _ := r.raw(key)
	b, why := parseBool(v)
	r.check(key, v, why)
	return b
}

// integer reads a whole number within the key's range (see ranges).
func (r *reader) integer(key string) int {
	v, _ := r.raw(key)
	n, why := parseInt(v)
	if b, ok := ranges[key]; ok && (why != "" || !b.holds(n)) {
		why = b.message() // the range says more than "not a whole number"
	}
	if !r.check(key, v, why) {
		return 0
	}
	return int(n)
}

// duration reads a duration within the key's range (see ranges); more, when
// not nil, checks a value within it.
func (r *reader) duration(key string, more func(time.Duration) string) time.Duration {
	v, _ := r.raw(key)
	d, why := parseDuration(v)
	if b, ok := ranges[key]; why == "" && ok && !b.holds(int64(d)) {
		why = b.message()
	}
	if why == "" && more != nil {
		why = more(d)
	}
	if !r.check(key, v, why) {
		return 0
	}
	return d
}

// size reads a size within the key's range (see ranges).
func (r *reader) size(key string) int64 {
	v, _ := r.raw(key)
	n, why := parseSize(v)
	if b, ok := ranges[key]; why == "" && ok && !b.holds(n) {
		why = b.message()
	}
	if !r.check(key, v, why) {
		return 0
	}
	return n
}

// indexes reads a list of index specifications: fields joined by +, each
// optionally :1 or :-1.
func (r *reader) indexes(key string) []Index {
	v, _ := r.raw(key)
	if v == "" {
		return nil
	}
	list, why := parseList(v)
	var out []Index
	for _, item := range list {
		if why != "" {
			break
		}
		var ix Index
		for _, part := range strings.Split(item, "+") {
			path, order, hasOrder := strings.Cut(strings.TrimSpace(part), ":")
			f := IndexField{Path: path, Order: 1}
			switch {
			case hasOrder && order == "-1":
				f.Order = -1
			case hasOrder && order != "1":
				why = strconv.Quote(part) + ": the order is 1 or -1"
			}
			if w := checkFieldPath(path); why == "" && w != "" {
				why = strconv.Quote(path) + " " + w
			}
			ix = append(ix, f)
		}
		out = append(out, ix)
	}
	if !r.check(key, v, why) {
		return nil
	}
	return out
}

func (r *reader) fieldPaths(key string) []string {
	v, _ := r.raw(key)
	if v == "" {
		return nil
	}
	list, why := parseList(v)
	if why == "" {
		for _, p := range list {
			if why = checkFieldPath(p); why != "" {
				why = strconv.Quote(p) + " " + why
				break
			}
		}
	}
	if !r.check(key, v, why) {
		return nil
	}
	return list
}

// storedPaths reads a list of field paths that are also stored as the
// nested fields they name (bucket_key under key, stats under stats,
// count_by under counts): each segment must be a field name as it is
// (checkStoredPath), and no path may lie inside another, where one field
// would have to be both a value and a document.
func (r *reader) storedPaths(key string) []string {
	list := r.fieldPaths(key)
	var why string
	for _, p := range list {
		if why = checkStoredPath(p); why != "" {
			why = strconv.Quote(p) + " " + why
			break
		}
		if j := slices.IndexFunc(list, func(q string) bool { return strings.HasPrefix(q, p+".") }); j >= 0 {
			why = strconv.Quote(list[j]) + " lies inside " + strconv.Quote(p) + ": the paths are stored nested, and " +
				p + " cannot hold both a value and the field " + list[j][len(p)+1:] + "; keep one of them"
			break
		}
	}
	if !r.check(key, r.set[key], why) {
		return nil
	}
	return list
}

// uri resolves the connection string from exactly one of uri, uri_file, uri_env.
func (r *reader) uri(env func(string) string, readFile func(string) ([]byte, error)) (uri, source string) {
	literal, literalSet := r.raw("uri")
	file, fileSet := r.raw("uri_file")
	envName, envSet := r.raw("uri_env")

	var given []string
	for _, k := range []struct {
		key string
		set bool
	}{{"uri", literalSet}, {"uri_file", fileSet}, {"uri_env", envSet}} {
		if k.set {
			given = append(given, k.key)
		}
	}
	if len(given) == 0 {
		r.bad["uri"] = true
		r.errs = append(r.errs, &Error{Key: "uri", NoValue: true,
			Reason: "required: set uri (or uri_file, or uri_env) to a MongoDB connection string such as mongodb://localhost:27017"})
		return "", ""
	}
	// The first source given is validated; the others are only reported as
	// conflicts (their file or variable is not read).
	for _, k := range given[1:] {
		r.invalid(k, r.set[k], "conflicts with "+given[0]+"; give exactly one of uri, uri_file or uri_env")
	}
	var ok bool
	switch given[0] {
	case "uri":
		uri, ok = literal, r.check("uri", literal, checkURI(literal))
	case "uri_file":
		uri, ok = r.uriFromFile(file, readFile)
	default:
		uri, ok = r.uriFromEnv(envName, env)
	}
	if !ok || len(given) > 1 {
		return "", ""
	}
	return uri, given[0]
}

func (r *reader) uriFromFile(path string, readFile func(string) ([]byte, error)) (string, bool) {
	if strings.Contains(path, "://") {
		r.invalid("uri_file", path, "looks like a connection string; uri_file takes the path of a file holding one (use uri for the string itself)")
		return "", false
	}
	data, err := readFile(path)
	if err != nil {
		// The path is already in the message: keep only the cause, so that a
		// connection string given as a path is not repeated unredacted.
		why := err.Error()
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			why = pe.Err.Error()
		}
		r.invalid("uri_file", path, "cannot read the file: "+strings.ReplaceAll(why, path, RedactURI(path)))
		return "", false
	}
	return r.uriContent("uri_file", path, "the file", strings.TrimSpace(string(data)))
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (r *reader) uriFromEnv(name string, env func(string) string) (string, bool) {
	if !envNameRE.MatchString(name) {
		why := "not an environment variable name (letters, digits and _, not starting with a digit)"
		if strings.Contains(name, "://") {
			why = "looks like a connection string; uri_env takes the name of an environment variable holding one (use uri for the string itself)"
		}
		r.invalid("uri_env", name, why)
		return "", false
	}
	return r.uriContent("uri_env", name, "the environment variable", strings.TrimSpace(env(name)))
}

// uriContent validates a connection string read from a file or the
// environment. Content that does not even start like a connection string is
// not shown: it may be a bare password.
func (r *reader) uriContent(key, value, where, content string) (string, bool) {
	if content == "" {
		r.invalid(key, value, where+" is empty or not set")
		return "", false
	}
	why := checkURI(content)
	if why == "" {
		return content, true
	}
	if strings.HasPrefix(content, schemeMongoDB) || strings.HasPrefix(content, schemeSRV) {
		r.invalid(key, value, where+" holds an invalid connection string "+strconv.Quote(RedactURI(content))+": "+why)
	} else {
		r.invalid(key, value, where+" does not hold a MongoDB connection string: it must start with mongodb:// or mongodb+srv:// (content not shown)")
	}
	return "", false
}

func (r *reader) deadLetter(collection string) string {
	v, set := r.raw("dead_letter_collection")
	if !set {
		if collection == "" { // collection was rejected: no default to derive
			return ""
		}
		v = collection + deadLetterSuffix
		if t := r.parsed["collection"]; t != nil {
			v = t.Suffixed(deadLetterSuffix) // its suffix literal: "k_$ns" gives "k_$['ns']_dead"
		}
		if why := r.collectionOrTemplate("dead_letter_collection", v); why != "" {
			r.invalid("dead_letter_collection", v, why+" (this default is derived from collection; set dead_letter_collection)")
			return ""
		}
		return v
	}
	switch strings.ToLower(v) {
	case "off", "none", "no", "false", "0", "disabled", "disable":
		r.invalid("dead_letter_collection", v, "cannot be disabled: records MongoDB rejects must be kept somewhere; give a collection name")
		return ""
	}
	if !r.check("dead_letter_collection", v, r.collectionOrTemplate("dead_letter_collection", v)) {
		return ""
	}
	return v
}

func (r *reader) writeConcern() WriteConcern {
	v, set := r.raw("write_concern")
	if !set {
		return WriteConcern{}
	}
	if strings.EqualFold(v, "majority") {
		return WriteConcern{Majority: true}
	}
	members := ranges["write_concern"]
	n, why := parseInt(v)
	switch {
	case why == "" && n == 0:
		why = "unacknowledged writes cannot guarantee delivery (the plugin acknowledges a chunk only after MongoDB confirms the write); use majority or " + members.text()
	case why == "" && members.holds(n):
		return WriteConcern{W: int(n)}
	default:
		why = "must be majority or a number of members " + members.text() + " (tag sets are not supported)"
	}
	r.invalid("write_concern", v, why)
	return WriteConcern{}
}

func (r *reader) regex(key string) string {
	v, set := r.raw(key)
	if !set {
		return ""
	}
	re, err := regexp.Compile(v)
	if err != nil {
		r.invalid(key, v, "does not compile: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return ""
	}
	seen := map[string]bool{}
	for _, n := range re.SubexpNames() {
		if n == "" {
			continue
		}
		if seen[n] {
			r.invalid(key, v, "names the group "+strconv.Quote(n)+" twice")
			return ""
		}
		seen[n] = true
	}
	if len(seen) == 0 {
		r.invalid(key, v, "has no named group; name the fields with (?P<name>...)")
		return ""
	}
	return v
}

// timeFormat checks a strptime-style time format; unset is the default.
func (r *reader) timeFormat(key string) string {
	v, set := r.raw(key)
	if !set {
		return ""
	}
	if _, err := parser.ParseTimeFormat(v); err != nil {
		r.invalid(key, v, err.Error())
		return ""
	}
	return v
}

// types checks "field:kind,..." by the decoder's own grammar
// (parser.ParseTypeEntry) and field paths as every path key, and keeps the
// text as written.
func (r *reader) types(key string) string {
	v, _ := r.raw(key)
	if v == "" {
		return ""
	}
	list, why := parseList(v)
	seen := map[string]bool{}
	for _, item := range list {
		if why != "" {
			break
		}
		field, _, err := parser.ParseTypeEntry(item)
		switch {
		case err != nil:
			why = err.Error()
		case checkFieldPath(field) != "":
			why = strconv.Quote(item) + ": field " + checkFieldPath(field)
		case seen[field]:
			why = "field " + strconv.Quote(field) + " is given twice"
		}
		seen[field] = true
	}
	if !r.check(key, v, why) {
		return ""
	}
	return v
}

func (r *reader) instanceName(key, why string) string {
	v, set := r.raw(key)
	if !set {
		return ""
	}
	for _, c := range v {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == ']' {
			r.invalid(key, v, "must not contain spaces, control characters or ']'"+why)
			return ""
		}
	}
	return v
}

// defaultLockDir is lock_dir's default as the key table writes it; the
// folder it names is DefaultLockDir.
const defaultLockDir = tmpdir + "/out_mongodb-agents-<uid>"

// tmpdir, leading a lock_dir, stands for the environment's temporary folder
// (os.TempDir: $TMPDIR, /tmp when unset). Fluent Bit substitutes only
// ${VAR}, so it reaches the plugin as written.
const tmpdir = "$TMPDIR"

// DefaultLockDir is the folder lock_dir names when unset:
// out_mongodb-agents-<uid> in the environment's temporary folder, <uid>
// the effective user's: a folder of the user's own (see
// instance.claimAgent).
func DefaultLockDir() string {
	return filepath.Join(os.TempDir(), "out_mongodb-agents-"+strconv.Itoa(os.Geteuid()))
}

// lockDir reads the folder of the agent slots' lock files: an absolute
// path (or one under $TMPDIR), cleaned.
func (r *reader) lockDir(key string) string {
	v, _ := r.raw(key)
	if v == defaultLockDir {
		return DefaultLockDir()
	}
	dir := v
	if rest, ok := strings.CutPrefix(v, tmpdir); ok && (rest == "" || rest[0] == '/') {
		dir = os.TempDir() + rest
	}
	why := ""
	switch {
	case strings.ContainsRune(dir, 0):
		why = "must not contain NUL"
	case !filepath.IsAbs(dir):
		why = "must be an absolute path (the agent's slot lock files go there; a relative one would depend on Fluent Bit's working directory)"
	}
	if !r.check(key, v, why) {
		return ""
	}
	return filepath.Clean(dir)
}

// good reports whether none of keys had its own value rejected.
func (r *reader) good(keys ...string) bool {
	for _, k := range keys {
		if r.bad[k] {
			return false
		}
	}
	return true
}
