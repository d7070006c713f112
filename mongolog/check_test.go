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

// Every configuration example in the README passes the check.
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
		if err != nil || problems > 0 {
			t.Errorf("README example %d (%s): %v\n%s\n%s", i, b[1], err, out.String(), b[2])
		}
		checked++
	}
	if checked < 2 {
		t.Errorf("%d README examples checked, want the classic and the YAML one at least", checked)
	}
}
