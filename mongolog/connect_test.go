package mongolog

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A target is the mongodb output an instance_name or Alias names, or the
// only one, with flags over its keys; Fluent Bit's own keys are left out.
// Of several outputs none is picked unnamed: the error lists them.
func TestTargetPicksTheOutput(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "fb.conf", `
[OUTPUT]
    Name       mongodb
    Match      a.*
    Workers    1
    uri        mongodb://one:27017
    collection first
[OUTPUT]
    Name          mongodb
    Alias         second_out
    uri           mongodb://two:27017
    collection    second
    bucket_key    host
    bucket_window 5m
`)
	_, err := Target{File: path}.Config(nil)
	if err == nil || !strings.Contains(err.Error(), "has 2 mongodb outputs: pick one with --output NAME") ||
		!strings.Contains(err.Error(), "(unnamed: give it an instance_name) at "+path+":2, second_out at "+path+":8") {
		t.Fatalf("two outputs, none named: %v", err)
	}
	only := write(t, dir, "one.conf", "[OUTPUT]\n    Name mongodb\n    uri mongodb://one:27017\n    collection first\n")
	cfg, err := Target{File: only}.Config(nil)
	if err != nil || cfg.Collection != "first" || cfg.URI != "mongodb://one:27017" {
		t.Fatalf("the only output: %+v, %v", cfg, err)
	}
	cfg, err = Target{File: path, Output: "second_out", Keys: map[string]string{"database": "other"}}.Config(nil)
	if err != nil || cfg.Collection != "second" || cfg.Database != "other" || cfg.BucketWindow != 5*time.Minute ||
		strings.Join(cfg.BucketKey, ",") != "host" {
		t.Fatalf("the output named second_out, database from a flag: %+v, %v", cfg, err)
	}
	if _, err := (Target{File: path, Output: "nope"}).Config(nil); err == nil || !strings.Contains(err.Error(), `no mongodb output named "nope"`) ||
		!strings.Contains(err.Error(), "there are: (unnamed") {
		t.Errorf("an output that is not there: %v", err)
	}
	if cfg, err := (Target{Keys: map[string]string{"collection": "c"}}).Config(nil); err != nil || cfg.URI != "mongodb://127.0.0.1:27017" {
		t.Errorf("flags alone: %+v, %v", cfg, err)
	}
	if _, err := (Target{File: filepath.Join(dir, "missing.conf")}).Config(nil); err == nil {
		t.Errorf("a missing configuration file: no error")
	}
}

func TestParseTimeAndAge(t *testing.T) {
	for s, want := range map[string]string{
		"2024-06-01":                "2024-06-01T00:00:00Z",
		"2024-06-01T10:05":          "2024-06-01T10:05:00Z",
		"2024-06-01 10:05:07":       "2024-06-01T10:05:07Z",
		"2024-06-01T12:00:00+02:00": "2024-06-01T10:00:00Z",
	} {
		got, err := ParseTime(s)
		if err != nil || got.UTC().Format(time.RFC3339) != want {
			t.Errorf("ParseTime(%q) = %v, %v; want %s", s, got, err, want)
		}
	}
	if _, err := ParseTime("yesterday"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("a bad time: %v", err)
	}
	for s, want := range map[string]time.Duration{"15m": 15 * time.Minute, "7d": 7 * 24 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := ParseAge(s); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseAge("-1h"); err == nil {
		t.Errorf("a negative age: no error")
	}
	if _, err := ParseCond("cost"); err == nil || !strings.Contains(err.Error(), "want field=value") {
		t.Errorf("a condition without an operator: %v", err)
	}
	if c, err := ParseCond("a.b>=2.5"); err != nil || c != (Cond{"a.b", ">=", "2.5"}) {
		t.Errorf("ParseCond(a.b>=2.5) = %+v, %v", c, err)
	}
}

// The tag an import gives its records is one the output's Match accepts.
func TestTargetTag(t *testing.T) {
	dir := t.TempDir()
	for match, want := range map[string]string{"": "import", "*": "import", "app.*": "app.import", "access": "access", "*.log": "import.log"} {
		conf := "[OUTPUT]\n    Name mongodb\n"
		if match != "" {
			conf += "    Match " + match + "\n"
		}
		got, err := Target{File: write(t, dir, "fb.conf", conf)}.Tag(nil, "import")
		if err != nil || got != want {
			t.Errorf("Match %q: tag %q, %v; want %q", match, got, err, want)
		}
	}
	if _, err := (Target{File: write(t, dir, "re.conf", "[OUTPUT]\n    Name mongodb\n    Match_Regex ^app\\.\n")}).Tag(nil, "import"); err == nil ||
		!strings.Contains(err.Error(), "matches tags by Match_Regex ^app\\.: give the tag with --tag") {
		t.Errorf("Match_Regex: %v", err)
	}
	if got, err := (Target{}).Tag(nil, "import"); err != nil || got != "import" {
		t.Errorf("no file: %q, %v", got, err)
	}
}
