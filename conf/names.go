package conf

// The rules of database, collection and field names, and their lengths
// against the servers' namespace limit.

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
)

// namespaceLengths checks the collection's name with any partition suffix
// against MongoDB's limits.
func (r *reader) namespaceLengths(c *Config) {
	if isTemplate(c.Collection) {
		return // every resolved name is fitted (see naming.Template.Resolve)
	}
	dbLen := len(c.Database)
	if isTemplate(c.Database) {
		dbLen = naming.MaxDatabaseBytes
	}
	longest := c.Collection
	if r.good("partition") && c.Partition != layout.None {
		suffix := c.Partition.Suffix()
		longest = c.Collection + suffix
		if len(longest) > naming.MaxCollectionBytes {
			r.invalid("collection", c.Collection, "too long for partition "+string(c.Partition)+": "+
				"<collection>"+suffix+" must be at most 200 bytes")
		}
	}
	if dbLen+1+len(longest) > naming.MaxNamespaceBytes {
		r.invalid("collection", c.Collection, "<database>.<collection> (with any partition suffix) must be at most 235 bytes (MongoDB takes 255, servers on DocumentDB 235)")
	}
}

// deadLetterName checks the dead letter collection against the collection
// and its partitions. A derived name is not checked when collection failed.
func (r *reader) deadLetterName(c *Config) {
	if !r.good("collection", "dead_letter_collection") || c.DeadLetterCollection == "" {
		return
	}
	dl := c.DeadLetterCollection
	dlValue := r.set["dead_letter_collection"]
	if dlValue == "" {
		dlValue = dl
	}
	switch {
	case dl == c.Collection:
		r.invalid("dead_letter_collection", dlValue, "must differ from collection")
	case r.good("partition") && c.Partition != layout.None && layout.IsPartition(dl, c.Collection, c.Partition):
		r.invalid("dead_letter_collection", dlValue, "looks like a partition of collection and could be dropped with it; choose another name")
	case isTemplate(dl) || isTemplate(c.Database):
		// Fitted when resolved.
	case len(c.Database)+1+len(dl) > naming.MaxNamespaceBytes:
		r.invalid("dead_letter_collection", dlValue, "<database>.<dead_letter_collection> must be at most 235 bytes (MongoDB takes 255, servers on DocumentDB 235)")
	}
}

// Name rules. Each returns "" when valid, else the reason.

func checkDatabase(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > naming.MaxDatabaseBytes:
		return "must be shorter than 64 bytes"
	case strings.ContainsAny(s, "/\\. \"$\x00"):
		return "must not contain / \\ . space \" $ or NUL"
	case naming.Reserved(s):
		return "is one of MongoDB's own databases (admin, local and config are reserved): choose another name"
	}
	return ""
}

func checkCollection(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > naming.MaxCollectionBytes:
		return "must be at most 200 bytes"
	case strings.ContainsAny(s, "$\x00"):
		return "must not contain $ or NUL"
	case strings.HasPrefix(s, "system."):
		return "must not start with system. (reserved by MongoDB)"
	}
	return ""
}

// checkFieldPath checks a dotted path such as kubernetes.pod_name.
func checkFieldPath(p string) string {
	if strings.ContainsRune(p, 0) {
		return "must not contain NUL"
	}
	if slices.Contains(strings.Split(p, "."), "") {
		return "has an empty path segment (write a.b, not a..b, .a or a.)"
	}
	return ""
}

// checkStoredPath checks a field path (checkFieldPath passed) that is
// stored as the nested fields it names: each segment is stored as it is,
// so none may start with '$' or hold invalid UTF-8.
func checkStoredPath(p string) string {
	for _, seg := range strings.Split(p, ".") {
		switch {
		case strings.HasPrefix(seg, "$"):
			return "has a segment starting with '$' (" + seg + "), which MongoDB reads as an operator, not a field name"
		case !utf8.ValidString(seg):
			return "is not valid UTF-8"
		}
	}
	return ""
}

// checkNoNUL checks a field name read as written (parse_key, parse_time_key).
func checkNoNUL(s string) string {
	if strings.ContainsRune(s, 0) {
		return "must not contain NUL"
	}
	return ""
}

// checkListen checks the host:port of the metrics endpoint; "" is none.
func checkListen(v string) string {
	if v == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		return "must be host:port with a port from 1 to 65535, e.g. 127.0.0.1:2021"
	}
	return ""
}

// AllInterfaces reports whether metrics_listen value v (valid, not "")
// binds every interface of the host: no host, 0.0.0.0 or ::.
func AllInterfaces(v string) bool {
	host, _, err := net.SplitHostPort(v)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// checkFieldName checks a top-level field name the plugin writes.
func checkFieldName(s string) string {
	if s == model.ID {
		return "_id is the document id"
	}
	return checkReplacement(s)
}

// checkIDKey checks id_key: "" (off) or a top-level field name as stored.
func checkIDKey(s string) string {
	switch {
	case s == model.ID:
		return "a record's own _id field is stored as __id: name that field (__id) instead"
	case strings.Contains(s, "."):
		return "must be a top-level field name: nested paths are not supported, and a field named with a '.' is stored with key_replace_dot in its place"
	case strings.HasPrefix(s, "$"):
		return "must not start with '$' (a leading '$' in a field name is stored as key_replace_dollar)"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL"
	}
	return ""
}

// checkReplacement checks a replacement for '.' or a leading '$' in field names.
func checkReplacement(s string) string {
	switch {
	case strings.Contains(s, "."):
		return "must not contain '.'"
	case strings.HasPrefix(s, "$"):
		return "must not start with '$'"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL"
	}
	return ""
}

// partitionName is how the partition key writes period p: "none" for
// layout.None.
func partitionName(p layout.Period) string {
	if p == layout.None {
		return "none"
	}
	return string(p)
}

// partitionOf is the period the partition key's value v names.
func partitionOf(v string) layout.Period {
	if v == partitionName(layout.None) {
		return layout.None
	}
	return layout.Period(v)
}
