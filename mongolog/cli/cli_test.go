package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
	"github.com/fluent-bit-out-mongodb/out_mongodb/version"
)

// These tests need no server: what they run either fails before any I/O or
// talks to a closed port. The commands against a server are tested in
// test/e2e/cli_test.go.

// closed is a target no server listens on, given up on quickly.
var closed = []string{"--uri", "mongodb://127.0.0.1:1/", "--connect_timeout", "1s"}

// run runs mongolog in-process with args and the environment vars.
func run(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return vars[k] }})
	return out.String(), errOut.String(), code
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// One function gives every exit code, from the error a command returns.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"problems", &ProblemsError{N: 2}, ExitProblems},
		{"problems wrapped", fmt.Errorf("verify: %w", &ProblemsError{N: 1}), ExitProblems},
		{"a plain error", errors.New(`condition "x": want field=value`), ExitUsage},
		{"interrupted", &InterruptedError{Next: "run it again"}, ExitInterrupted},
		{"context canceled in the driver's error", fmt.Errorf("reading: %w", context.Canceled), ExitInterrupted},
		{"no answer to the ping", &mongolog.ServerError{Err: errors.New("cannot reach MongoDB")}, ExitServer},
		{"unauthorized", mongo.CommandError{Code: 13, Name: "Unauthorized"}, ExitServer},
		{"authentication failed", fmt.Errorf("query: %w", mongo.CommandError{Code: 18, Name: "AuthenticationFailed"}), ExitServer},
		{"a write refused", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 121}}}, ExitServer},
		{"network error", mongo.CommandError{Labels: []string{"NetworkError"}}, ExitServer},
		{"timeout", fmt.Errorf("find: %w", context.DeadlineExceeded), ExitServer},
		{"client disconnected", mongo.ErrClientDisconnected, ExitServer},
		{"an election", mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}, ExitServer},
		{"a duplicate key", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000}}}, ExitServer},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("%s (%v): exit %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

// mongolog --help lists every exit code, and the README's table says the
// same.
func TestExitCodesDocumented(t *testing.T) {
	out, _, code := run(t, nil, "--help")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Errorf("--help: exit %d", code)
	}
	for _, c := range exitCodes {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %d +%s$`, c.Code, regexp.QuoteMeta(c.Meaning))).MatchString(out) {
			t.Errorf("--help lacks exit code %d (%s):\n%s", c.Code, c.Meaning, out)
		}
		if row := fmt.Sprintf("| %d | %s |", c.Code, c.Meaning); !strings.Contains(string(readme), row) {
			t.Errorf("README lacks the row %q", row)
		}
	}
}

// A usage error is refused before any I/O (the URI is a closed port, which
// would be exit 3): exit 2, nothing on stdout, and a message that names
// what is wrong.
func TestUsageErrors(t *testing.T) {
	log := write(t, "a.log", "one line\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"query", "--nosuch"}, "unknown flag: --nosuch"},
		{[]string{"query", "--raw"}, "--raw is gone: use --format raw"},
		{[]string{"query", "--table"}, "--table is gone: use --format table"},
		{[]string{"query", "--format", "xml"}, `--format "xml": want one of json, table, raw`},
		{[]string{"query", "level"}, `condition "level": want field=value`},
		{[]string{"query", "cost>abc"}, `> compares numbers, and "abc" is not one`},
		{[]string{"query", "--since", "soon"}, "--since:"},
		{[]string{"query", "--from", "yesterday"}, `--from: time "yesterday"`},
		{[]string{"query", "-f", "--lag", "x"}, "--lag:"},
		{[]string{"query", "--mode", "heap"}, "mode"},
		{[]string{"query", "-c", "/nonexistent/fluent-bit.conf"}, "/nonexistent/fluent-bit.conf"},
		{[]string{"query", "--collection", "app_["}, `--collection "app_[": not a glob path.Match reads`},
		{[]string{"stats", "--database", `logs\`}, `--database "logs\\": not a glob`},
		{[]string{"verify", "--collection", "[]a"}, `--collection "[]a": not a glob`},
		{[]string{"prune", "--older-than", "7d", "--collection", "a[", "--dry-run"}, `--collection "a[": not a glob`},
		{[]string{"export", "--dir", "d", "--from", "2024-06-01", "--to", "2024-06-02", "--collection", "x["}, `--collection "x[": not a glob`},
		{[]string{"doctor", "--collection", "x["}, `--collection "x[": not a glob`},
		{[]string{"stats", "--step", "x"}, "--step:"},
		{[]string{"stats", "--step", "30s", "--bucket_window", "1m"}, "cannot be finer than the bucket window"},
		{[]string{"stats", "--mode", "flat"}, "mode flat has no buckets"},
		{[]string{"stats", "--bucket_key", "module", "level=error"}, "level is not a bucket_key field (module)"},
		{[]string{"verify", "extra"}, `unknown command "extra"`},
		{[]string{"verify", "--to", "later"}, "--to:"},
		{[]string{"verify", "--since", "soon"}, "--since:"},
		// verify takes stats and count_by as flags (its summaries' fields
		// without -c) and checks them as the plugin does.
		{[]string{"verify", "--stats", "a, ,b"}, `stats: invalid value "a, ,b"`},
		{[]string{"verify", "--count_by", "a."}, `count_by: invalid value "a."`},
		{[]string{"prune"}, "--older_than is required"},
		{[]string{"prune", "--older-than", "old"}, "--older_than:"},
		{[]string{"prune", "--older_than", "old"}, "--older_than:"},
		{[]string{"prune", "--older-than", "7d", "--bucket_key", "device", "t=20"}, "condition t=20"},
		{[]string{"check"}, `required flag(s) "config" not set`},
		{[]string{"check", "-c", "/nonexistent/fluent-bit.conf"}, "/nonexistent/fluent-bit.conf"},
		{[]string{"import"}, "requires at least 1 arg"},
		{[]string{"import", filepath.Join(t.TempDir(), "none-*.log")}, "no such file"},
		{[]string{"import", t.TempDir()}, "is a directory"},
		{[]string{"import", "--write_batch", "0", log}, "write_batch"},
		{[]string{"doctor", "--format", "xml"}, `--format "xml": want text or json`},
		{[]string{"doctor", "--interval", "x"}, "--interval:"},
		{[]string{"doctor", "--backlog-wait", "soon"}, `--backlog_wait "soon": want auto, 0 (no wait) or a duration`},
		{[]string{"doctor", "--new_ttl", "0s"}, `--new_ttl "0s": want a duration of 1s or more`},
		{[]string{"doctor", "--plugin_ttl", "7d", "--ttl", "1d"}, "--ttl is now the plugin's ttl"},
		{[]string{"doctor", "-c", "/nonexistent/fluent-bit.conf"}, "/nonexistent/fluent-bit.conf"},
		{[]string{"export", "--from", "2024-06-01", "--to", "2024-06-02"}, "--dir is required"},
		{[]string{"export", "--dir", t.TempDir(), "--from", "2024-06-01", "--to", "2024-06-02", "--step", "x"}, "--step:"},
	} {
		args := c.args
		if len(args) > 0 && args[0] != "check" && args[0] != "nosuch" {
			args = append(append([]string{args[0]}, closed...), args[1:]...)
		}
		out, errOut, code := run(t, nil, args...)
		if code != ExitUsage || out != "" || !strings.HasPrefix(errOut, "mongolog: ") || !strings.Contains(errOut, c.want) {
			t.Errorf("mongolog %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A server that does not answer is exit 3, for every command that talks to
// one, with a message that names the server (credentials hidden).
func TestUnreachableServer(t *testing.T) {
	log := write(t, "a.log", "one line\n")
	uri := []string{"--uri", "mongodb://user:secret@127.0.0.1:1/", "--connect_timeout", "1s"}
	for _, args := range [][]string{
		{"query"},
		{"query", "-f"},
		{"stats"},
		{"verify"},
		{"prune", "--older-than", "7d", "--dry-run"},
		{"import", log},
		{"doctor"},
		{"export", "--from", "2024-06-01", "--to", "2024-06-02", "--dir", t.TempDir()},
	} {
		out, errOut, code := run(t, nil, append(append([]string{args[0]}, uri...), args[1:]...)...)
		if code != ExitServer || out != "" || !strings.Contains(errOut, "cannot reach MongoDB at mongodb://user:xxxxx@127.0.0.1:1/") ||
			strings.Contains(errOut, "secret") {
			t.Errorf("mongolog %v at a closed port: exit %d, stdout %q, stderr %q; want exit 3 naming the server", args, code, out, errOut)
		}
	}
}

// check exits 0 on a good configuration, 1 on one with problems (printed on
// stdout), and reads ${VAR} from the environment it is given.
func TestCheckCommand(t *testing.T) {
	good := write(t, "good.conf", "[OUTPUT]\n    Name mongodb\n    Match *\n    uri ${MONGO}\n    Retry_Limit 5\n    Workers 2\n")
	out, errOut, code := run(t, map[string]string{"MONGO": "mongodb://db:27017"}, "check", "-c", good)
	if code != ExitOK || !strings.Contains(out, "output mongodb: ok") || errOut != "" {
		t.Errorf("check of a good configuration: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	out, _, code = run(t, nil, "check", "-c", good)
	if code != ExitProblems || !strings.Contains(out, "uri") {
		t.Errorf("check without the variable the uri needs: exit %d\n%s", code, out)
	}
	bad := write(t, "bad.conf", "[OUTPUT]\n    Name mongodb\n    Match *\n    bucket_keys host\n    ttl forever\n")
	out, errOut, code = run(t, nil, "check", "-c", bad)
	if code != ExitProblems || !strings.Contains(out, "3 problems") || !strings.Contains(out, "did you mean bucket_key?") ||
		!strings.Contains(out, `ttl: invalid value "forever"`) || errOut != "" {
		t.Errorf("check of a configuration with 3 problems: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	none := write(t, "none.conf", "[OUTPUT]\n    Name stdout\n    Match *\n")
	if out, _, code := run(t, nil, "check", "-c", none); code != ExitProblems || !strings.Contains(out, "no [OUTPUT] with Name mongodb") {
		t.Errorf("check of a configuration without a mongodb output: exit %d\n%s", code, out)
	}
}

// Each command's --help shows an example.
func TestHelpHasExamples(t *testing.T) {
	for _, c := range []string{"check", "query", "stats", "verify", "prune", "import", "doctor", "export"} {
		out, _, code := run(t, nil, c, "--help")
		if code != 0 || !strings.Contains(out, "Examples:\n  mongolog "+c) {
			t.Errorf("%s --help: exit %d\n%s", c, code, out)
		}
	}
}

// mongolog version prints the version it was built with (make injects it
// with -ldflags -X into package version), the Go release and the platform.
func TestVersionCommand(t *testing.T) {
	out, errOut, code := run(t, nil, "version")
	if code != 0 || errOut != "" || out != "mongolog "+version.String()+"\n" {
		t.Errorf("mongolog version: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, "mongolog "+version.String())
	}
}

// Every flag of every command takes '-' and '_' alike: --dry-run and
// --dry_run, --bucket_key and --bucket-key.
func TestFlagSpellings(t *testing.T) {
	values := map[string]string{"bool": "", "int": "1", "int64": "1", "float64": "1", "string": "x", "stringArray": "x"}
	n := 0
	for _, c := range NewRoot(Env{}).Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			v, ok := values[f.Value.Type()]
			if !ok {
				t.Errorf("%s --%s: a flag of type %s the test does not know", c.Name(), f.Name, f.Value.Type())
				return
			}
			for _, name := range []string{strings.ReplaceAll(f.Name, "-", "_"), strings.ReplaceAll(f.Name, "_", "-")} {
				fresh, _, err := NewRoot(Env{}).Find([]string{c.Name()})
				if err != nil {
					t.Fatal(err)
				}
				arg := "--" + name
				if v != "" {
					arg += "=" + v
				}
				if err := fresh.ParseFlags([]string{arg}); err != nil || !fresh.Flags().Changed(f.Name) {
					t.Errorf("%s %s: %v (changed %v)", c.Name(), arg, err, fresh.Flags().Changed(f.Name))
				}
				n++
			}
		})
	}
	if n < 100 {
		t.Errorf("%d spellings tried: the walk missed the commands' flags", n)
	}
}

// A flag named like a plugin key (conf's list) is that key, in every
// command: it sets the key of the target it reads (its help says so, as
// addTarget writes it), never something else.
func TestFlagsNamedLikeKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range conf.Keys() {
		keys[k.Key] = true
	}
	for _, c := range NewRoot(Env{}).Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if keys[f.Name] && !strings.HasPrefix(f.Usage, "the plugin's "+f.Name+" ") {
				t.Errorf("%s --%s is named like the plugin key %s and means something else: %q", c.Name(), f.Name, f.Name, f.Usage)
			}
		})
	}
}

// doctor --ttl is the plugin's ttl: given with a target of flags at a
// closed port it is checked as the key is (a bad value is refused naming
// the key), and the old --plugin_ttl still sets it, with a warning.
func TestDoctorTTLIsTheKey(t *testing.T) {
	_, errOut, code := run(t, nil, append([]string{"doctor"}, append(closed, "--ttl", "forever")...)...)
	if code != ExitUsage || !strings.Contains(errOut, `ttl: invalid value "forever"`) {
		t.Errorf("doctor --ttl forever: exit %d, stderr %q; want the ttl key's error", code, errOut)
	}
	_, errOut, code = run(t, nil, append([]string{"doctor"}, append(closed, "--plugin_ttl", "forever")...)...)
	if code != ExitUsage || !strings.Contains(errOut, `ttl: invalid value "forever"`) || !strings.Contains(errOut, "--plugin_ttl is --ttl") {
		t.Errorf("doctor --plugin_ttl forever: exit %d, stderr %q; want a warning and the ttl key's error", code, errOut)
	}
}
