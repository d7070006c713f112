package mongolog

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// A misspelt key fails the check and names the key meant, in a classic
// configuration with @INCLUDE, @SET and ${VAR}, and in YAML.
func TestCheckNamesTheKeyMeant(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "outputs.conf", `
[OUTPUT]
    Name        mongodb
    Alias       logs_out
    Match       *
    uri         ${MONGO}
    bucket_keys host
    ttl         ${TTL}
`)
	classic := write(t, dir, "fluent-bit.conf", `
@SET TTL=7d
[SERVICE]
    Flush 1
[INPUT]
    Name dummy
@INCLUDE outputs.conf
[OUTPUT]
    Name stdout
    Match *
`)
	yamlFile := write(t, dir, "fluent-bit.yaml", `
env:
  TTL: 7d
pipeline:
  inputs:
    - name: dummy
  outputs:
    - name: mongodb
      alias: logs_out
      match: '*'
      uri: ${MONGO}
      bucket_keys: host
      ttl: ${TTL}
`)
	for _, path := range []string{classic, yamlFile} {
		var out bytes.Buffer
		problems, err := Check(&out, path, env(map[string]string{"MONGO": "mongodb://db:27017"}))
		if err != nil {
			t.Fatal(err)
		}
		if problems != 1 || !strings.Contains(out.String(), "bucket_keys: unknown key; did you mean bucket_key?") ||
			!strings.Contains(out.String(), "mongodb (logs_out)") {
			t.Errorf("%s: %d problems:\n%s", path, problems, out.String())
		}
	}
	var out bytes.Buffer
	if problems, _ := Check(&out, write(t, dir, "none.conf", "[OUTPUT]\n    Name stdout\n"), nil); problems != 1 {
		t.Errorf("a configuration without a mongodb output: %d problems:\n%s", problems, out.String())
	}
}

// Every configuration example in the README passes the check without a
// warning.
func TestCheckReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	blocks := regexp.MustCompile("(?s)```(ini|yaml)\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	checked := 0
	for i, b := range blocks {
		if !regexp.MustCompile(`(?im)^\s*-?\s*name:?\s+mongodb\s*$`).MatchString(b[2]) {
			continue
		}
		ext := map[string]string{"ini": ".conf", "yaml": ".yaml"}[b[1]]
		path := write(t, dir, "example"+string(rune('a'+i))+ext, b[2])
		var out bytes.Buffer
		problems, err := Check(&out, path, env(map[string]string{"MONGODB_URI": "mongodb://127.0.0.1:27017"}))
		if err != nil || problems > 0 || strings.Contains(out.String(), "warning") {
			t.Errorf("README example %d (%s): %v\n%s\n%s", i, b[1], err, out.String(), b[2])
		}
		checked++
	}
	if checked < 2 {
		t.Errorf("%d README examples checked, want the classic and the YAML one at least", checked)
	}
}

// check runs Check on a classic configuration holding one mongodb output
// with the given settings.
func check(t *testing.T, settings string) (int, string) {
	t.Helper()
	path := write(t, t.TempDir(), "fluent-bit.conf", "[OUTPUT]\n    Name mongodb\n    Match *\n    uri mongodb://db1:27017\n"+settings)
	var out bytes.Buffer
	problems, err := Check(&out, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return problems, out.String()
}

// Fluent Bit keeps host, port, tls and tls.* for itself: check says what
// each does (nothing, or stopping Fluent Bit for tls on) and what in the
// uri does what the user meant.
func TestCheckFluentBitKeys(t *testing.T) {
	const safe = "    Workers 1\n    Retry_Limit no_limits\n"
	for _, c := range []struct {
		settings string
		problems int
		want     []string
	}{
		{"tls on\n", 1, []string{"1 problem", `tls on: Fluent Bit will not start ("mongodb.N does not support TLS")`, "put tls=true in the uri"}},
		{"tls off\n", 0, []string{": ok", "warning: tls off: not used by the plugin; TLS is on when the uri says tls=true"}},
		{"tls.verify on\n", 0, []string{": ok", "warning: tls.verify on: not used", "unless the uri says tlsInsecure=true"}},
		{"tls.verify off\n", 0, []string{"warning: tls.verify off: not used", "put tlsInsecure=true in the uri"}},
		{"tls.ca_file /etc/ssl/ca.pem\ntls.crt_file /etc/ssl/a.crt\ntls.key_file /etc/ssl/a.key\n", 0,
			[]string{"tls.ca_file /etc/ssl/ca.pem: not used", "put tlsCAFile=/etc/ssl/ca.pem in the uri", "tls.crt_file /etc/ssl/a.crt: not used", "tlsCertificateKeyFile=FILE"}},
		{"host db2\nport 27018\n", 0, []string{"warning: host db2: not used", "warning: port 27018: not used", "connects to the hosts in the uri"}},
		{"net.connect_timeout 5\nnet.keepalive off\n", 0, []string{"net.connect_timeout 5: not used", "key is connect_timeout", "net.keepalive off: not used", "socketTimeoutMS"}},
		{"alias audit\n", 0, []string{"output mongodb (audit): ok", "alias audit: Fluent Bit names the output so in its own lines, but the plugin never sees it", "instance_name audit"}},
	} {
		problems, out := check(t, safe+c.settings)
		if problems != c.problems {
			t.Errorf("%q: %d problems, want %d:\n%s", c.settings, problems, c.problems, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: no %q in:\n%s", c.settings, w, out)
			}
		}
	}
	if problems, out := check(t, safe+"alias audit\ninstance_name audit\n"); problems != 0 || strings.Contains(out, "warning") {
		t.Errorf("alias and instance_name set alike: %d problems:\n%s", problems, out)
	}
}

// Check warns, without failing, when Workers or Retry_Limit is left at
// Fluent Bit's default and when a name holds a % taken for a date format.
func TestCheckWarnsOfRiskyDefaults(t *testing.T) {
	problems, out := check(t, "collection logs_%Y%m%d\n")
	for _, w := range []string{
		": ok",
		"warning: workers is not set: with Fluent Bit's default of 0 flushes run on the engine thread",
		"warning: retry_limit is not set: Fluent Bit retries a chunk once and then drops it",
		"warning: collection logs_%Y%m%d: % is taken literally (no date formats here); for a collection per day, week or month set partition",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
	if problems != 0 {
		t.Errorf("%d problems, want warnings only:\n%s", problems, out)
	}
	if problems, out := check(t, "Workers 2\nRetry_Limit 10\n"); problems != 0 || strings.Contains(out, "warning") {
		t.Errorf("Workers and Retry_Limit set: %d problems:\n%s", problems, out)
	}
	if _, out := check(t, "Workers 2\nRetry_Limit no_retries\n"); !strings.Contains(out, "warning: retry_limit no_retries: Fluent Bit drops a chunk the first time") {
		t.Errorf("no warning for no_retries:\n%s", out)
	}
	// nginx_access's host is the ident field: a bucket_key of it groups
	// nothing; remote is the client, and apache's host is the client.
	if problems, out := check(t, "Workers 2\nRetry_Limit 10\nparser nginx_access\nbucket_key host\n"); problems != 0 ||
		!strings.Contains(out, "warning: bucket_key host with parser nginx_access: host is the ident field") || !strings.Contains(out, "the client address is remote") {
		t.Errorf("bucket_key host with nginx_access: %d problems:\n%s", problems, out)
	}
	for _, ok := range []string{"parser nginx_access\nbucket_key remote\n", "parser apache_combined\nbucket_key host\n"} {
		if _, out := check(t, "Workers 2\nRetry_Limit 10\n"+ok); strings.Contains(out, "warning") {
			t.Errorf("%q: a warning:\n%s", ok, out)
		}
	}
}

// An index on where versions before nested paths stored a dotted
// bucket_key, stats or count_by path is a warning naming where the path
// is stored now.
func TestCheckWarnsOfIndexesOnOldNames(t *testing.T) {
	problems, out := check(t, "bucket_key kubernetes.pod_name,host\nstats http.latency_ms\ncount_by http.status\n"+
		"indexes key.kubernetes_pod_name+start, stats.http_latency_ms.max:-1, counts.http_status.500, key.host, key.kubernetes.pod_name\n")
	for _, w := range []string{
		"warning: indexes key.kubernetes_pod_name: bucket_key kubernetes.pod_name is stored nested, at key.kubernetes.pod_name; key.kubernetes_pod_name is where versions before stored it, so the index serves only their buckets (index key.kubernetes.pod_name)",
		"warning: indexes stats.http_latency_ms.max: stats http.latency_ms is stored nested, at stats.http.latency_ms; stats.http_latency_ms is where versions before stored it, so the index serves only their buckets (index stats.http.latency_ms.max)",
		"warning: indexes counts.http_status.500: count_by http.status is stored nested, at counts.http.status; counts.http_status is where versions before stored it, so the index serves only their buckets (index counts.http.status.500)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "is stored nested"); n != 3 || problems != 0 {
		t.Errorf("%d warnings of old names, %d problems, want 3 and none:\n%s", n, problems, out)
	}
}

// A template that does not parse is a problem naming the key, the value
// and the column, as at start-up; a good one is none.
func TestCheckTemplates(t *testing.T) {
	problems, out := check(t, "    collection k8s_$kubernetes['namespace_name\n")
	if want := `collection: invalid value "k8s_$kubernetes['namespace_name": template: unclosed quote at column 17`; problems != 1 || !strings.Contains(out, want) {
		t.Errorf("check of a bad template: %d problems\n%s\nwant %s", problems, out, want)
	}
	if problems, out := check(t, "    database logs_$TAG[1]\n    collection k8s_$kubernetes['namespace_name']\n    target_limit 50\n"); problems != 0 {
		t.Errorf("check of good templates: %d problems\n%s", problems, out)
	}
}

// Two outputs that write one collection with Match patterns a tag can meet
// both of store its records twice: check warns, naming both; outputs apart
// by their Match, their collection or their server are not warned of.
func TestCheckOverlappingOutputs(t *testing.T) {
	out := func(match, coll, uri string) string {
		return "[OUTPUT]\n    Name mongodb\n    Match " + match + "\n    uri " + uri + "\n    collection " + coll + "\n    Workers 1\n    Retry_Limit 5\n"
	}
	const db1, db2 = "mongodb://db1:27017", "mongodb://db2:27017"
	for _, c := range []struct {
		conf string
		warn bool
	}{
		{out("*", "logs", db1) + out("app.*", "logs", db1), true},
		{out("kube.*.web", "logs", db1) + out("kube.prod.*", "logs", db1), true},
		{out("app.*", "logs", db1) + out("sys.*", "logs", db1), false},
		{out("*", "logs", db1) + out("*", "audit", db1), false},
		{out("*", "logs", db1) + out("*", "logs", db2), false},
		{out("*", "logs_$TAG[1]", db1) + out("app.*", "logs_$TAG[1]", db1), true},
	} {
		path := write(t, t.TempDir(), "fluent-bit.conf", c.conf)
		var b bytes.Buffer
		problems, err := Check(&b, path, nil)
		if err != nil || problems != 0 {
			t.Fatalf("%d problems, %v:\n%s", problems, err, b.String())
		}
		got := strings.Contains(b.String(), "its records are stored twice")
		if got != c.warn {
			t.Errorf("warned %v, want %v, of:\n%s\n%s", got, c.warn, c.conf, b.String())
		}
		if got && !strings.Contains(b.String(), "fluent-bit.conf:1: output mongodb and ") {
			t.Errorf("the warning does not name both outputs:\n%s", b.String())
		}
	}
}

func TestGlobsMeet(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"*", "x", true}, {"a", "a", true}, {"a", "b", false}, {"a*", "*b", true}, {"a*c", "ab*", true},
		{"a*c", "b*", false}, {"a.*", "a", false}, {"*.x", "*.y", false}, {"*x*", "*y*", true},
		{"kube.*.web", "kube.prod.*", true}, {"kube.*.web", "kube.*.api", false}, {"", "*", true}, {"", "a", false},
	} {
		if got := globsMeet(c.a, c.b); got != c.want {
			t.Errorf("globsMeet(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := globsMeet(c.b, c.a); got != c.want {
			t.Errorf("globsMeet(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

// A configuration line check cannot place is quoted without its password.
func TestCheckQuotesNoPassword(t *testing.T) {
	path := write(t, t.TempDir(), "fluent-bit.conf", "uri mongodb://fbuser:s3cr3t@db1:27017/\n[OUTPUT]\n    Name mongodb\n")
	_, err := Check(&bytes.Buffer{}, path, nil)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), `"uri mongodb://fbuser:xxxxx@db1:27017/" is outside a section`) {
		t.Errorf("check of a line outside a section: %v", err)
	}
}

// check warns, without failing, of a uri that turns TLS verification off
// and of metrics served on every interface.
func TestCheckWarnsOfExposure(t *testing.T) {
	conf := func(uri, listen string) (int, string) {
		path := write(t, t.TempDir(), "fluent-bit.conf", "[OUTPUT]\n    Name mongodb\n    Match *\n    Workers 1\n    Retry_Limit 5\n    uri "+uri+"\n"+listen)
		var out bytes.Buffer
		problems, err := Check(&out, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return problems, out.String()
	}
	for _, c := range []struct{ uri, listen, want string }{
		{"mongodb://db1/?tls=true&tlsInsecure=true", "", "warning: the uri says tlsInsecure=true: TLS does not verify the server"},
		{"mongodb://db1/?tls=true&tlsAllowInvalidCertificates=true", "", "warning: the uri says tlsAllowInvalidCertificates=true"},
		{"mongodb://db1/?tls=true&tlsAllowInvalidHostnames=true", "", "warning: the uri says tlsAllowInvalidHostnames=true"},
		{"mongodb://db1/", "    metrics_listen :29302\n", "warning: metrics_listen :29302: serves the metrics on every interface of the host, to anyone who can reach port 29302; write 127.0.0.1:29302"},
		{"mongodb://db1/", "    metrics_listen 0.0.0.0:2021\n", "warning: metrics_listen 0.0.0.0:2021: serves the metrics on every interface"},
	} {
		problems, out := conf(c.uri, c.listen)
		if problems != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s %s: %d problems, want 0 and %q:\n%s", c.uri, c.listen, problems, c.want, out)
		}
	}
	if problems, out := conf("mongodb://db1/?tls=true", "    metrics_listen 127.0.0.1:29302\n"); problems != 0 || strings.Contains(out, "warning") {
		t.Errorf("verified TLS, metrics on 127.0.0.1: %d problems:\n%s", problems, out)
	}
}

// A reserved database is a problem for check as at start-up.
func TestCheckReservedDatabase(t *testing.T) {
	for _, settings := range []string{"    database admin\n", "    database $TAG\n    target_overflow local\n"} {
		problems, out := check(t, settings)
		if problems != 1 || !strings.Contains(out, "one of MongoDB's own") {
			t.Errorf("%q: %d problems, want 1 naming MongoDB's own databases:\n%s", settings, problems, out)
		}
	}
}
