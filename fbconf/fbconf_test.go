package fbconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// A classic file: sections in order with their file and line, keys lower
// case, values trimmed, ${VAR} from @SET before the environment, @INCLUDE
// of a glob relative to the including file, comments and blank lines
// skipped.
func TestLoadClassic(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "conf.d/a.conf", "[OUTPUT]\n    Name  mongodb\n    Alias a\n    Match ${TAG}\n")
	write(t, dir, "conf.d/b.conf", "[OUTPUT]\n    Name MongoDB\n    instance_name b\n    uri ${URI}\n")
	main := write(t, dir, "fluent-bit.conf", `# comment
@SET TAG=app.*
[SERVICE]
    Flush   1

[INPUT]
    Name dummy
@INCLUDE conf.d/*.conf
[OUTPUT]
    Name   stdout
    Match  *
    Format json lines
`)
	secs, err := Load(main, env(map[string]string{"TAG": "env wins not", "URI": "mongodb://db:27017"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range secs {
		got = append(got, s.Kind+" "+s.Name()+" "+filepath.Base(s.File)+":"+strings.TrimPrefix(s.Where(), s.File+":"))
	}
	want := "service  fluent-bit.conf:3|input dummy fluent-bit.conf:6|output mongodb a.conf:1|output MongoDB b.conf:1|output stdout fluent-bit.conf:9"
	if strings.Join(got, "|") != want {
		t.Errorf("sections\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	outs := Outputs(secs, "mongodb")
	if len(outs) != 2 || outs[0].Props.Get("match") != "app.*" || outs[1].Props.Get("uri") != "mongodb://db:27017" ||
		outs[0].Label() != "a" || outs[1].Label() != "b" {
		t.Errorf("mongodb outputs: %+v", outs)
	}
	if f := secs[4].Props.Get("format"); f != "json lines" {
		t.Errorf("a value with a space: %q", f)
	}
}

// YAML: env (itself expanded), includes, every pipeline section with its
// line, nested settings such as processors left out.
func TestLoadYAML(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "more.yaml", "pipeline:\n  outputs:\n    - name: mongodb\n      alias: more\n      match: '*'\n")
	main := write(t, dir, "fluent-bit.yaml", `env:
  DB: logs_${SITE}
includes:
  - more.yaml
pipeline:
  inputs:
    - name: tail
      path: /var/log/*.log
  outputs:
    - name: mongodb
      match: 'kube.*'
      database: ${DB}
      processors:
        logs:
          - name: content_modifier
`)
	secs, err := Load(main, env(map[string]string{"SITE": "eu"}))
	if err != nil {
		t.Fatal(err)
	}
	outs := Outputs(secs, "mongodb")
	if len(secs) != 3 || len(outs) != 2 || outs[0].Label() != "more" || outs[1].Props.Get("database") != "logs_eu" ||
		outs[1].Props.Get("processors") != "" || outs[1].Line != 10 || secs[1].Props.Get("path") != "/var/log/*.log" {
		t.Errorf("sections: %+v", secs)
	}
}

// Errors name the file and line, and what is wrong.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "loop.conf", "@INCLUDE loop2.conf\n")
	write(t, dir, "loop2.conf", "@INCLUDE loop.conf\n")
	for _, c := range []struct{ name, content, want string }{
		{"header.conf", "[OUTPUT\n", "header.conf:1: section header \"[OUTPUT\" lacks its ]"},
		{"outside.conf", "Name x\n", "outside.conf:1: \"Name x\" is outside a section"},
		{"set.conf", "@SET X\n", "set.conf:1: @SET needs KEY=VALUE"},
		{"missing.conf", "@INCLUDE nothere.conf\n", "include " + filepath.Join(dir, "nothere.conf") + ": no such file"},
		{"cycle.conf", "@INCLUDE loop.conf\n", "loop.conf: included twice (an include cycle?)"},
		{"bad.yaml", "pipeline:\n  outputs:\n    - just a string\n", "bad.yaml:3: a pipeline output must be a mapping"},
		{"broken.yaml", "pipeline: [\n", "broken.yaml: yaml:"},
	} {
		_, err := Load(write(t, dir, c.name, c.content), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	// A quoted line never shows a password.
	for _, c := range []struct{ name, content, want string }{
		{"uri.conf", "uri mongodb://fbuser:s3cr3t@db1:27017/?replicaSet=rs0\n", `"uri mongodb://fbuser:xxxxx@db1:27017/?replicaSet=rs0" is outside a section`},
		{"at.conf", "uri\tmongodb://fbuser@s3cr3t@db1\n", `"uri\tmongodb://fbuser@xxxxx@db1" is outside a section`},
		{"passwd.conf", "tls.key_passwd s3cr3t\n", `"tls.key_passwd xxxxx" is outside a section`},
		{"header2.conf", "[OUTPUT mongodb://u:s3cr3t@h\n", `section header "[OUTPUT mongodb://u:xxxxx@h" lacks its ]`},
		{"uri.yaml", "pipeline: mongodb://u:s3cr3t@h/\n", "cannot unmarshal"},
	} {
		_, err := Load(write(t, dir, c.name, c.content), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v; want %q and no password", c.name, err, c.want)
		}
	}
	// A glob that matches nothing includes nothing.
	if secs, err := Load(write(t, dir, "glob.conf", "@INCLUDE none/*.conf\n[INPUT]\n    Name dummy\n"), env(nil)); err != nil || len(secs) != 1 {
		t.Errorf("an include glob matching nothing: %v, %v", secs, err)
	}
}
