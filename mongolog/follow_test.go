package mongolog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// The default follow lag is the configuration's flush interval plus
// flush_timeout; a flush that is not a number of seconds is refused.
func TestDefaultLag(t *testing.T) {
	cfg := &conf.Config{FlushTimeout: 30 * time.Second}
	write := func(text string) string {
		p := filepath.Join(t.TempDir(), "fluent-bit.conf")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yaml := func(text string) string {
		p := filepath.Join(t.TempDir(), "fluent-bit.yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := "[OUTPUT]\n    Name mongodb\n    Match *\n"
	for _, c := range []struct {
		file string
		want time.Duration
	}{
		{"", 31 * time.Second},
		{write(out), 31 * time.Second},
		{write("[SERVICE]\n    Flush 5\n" + out), 35 * time.Second},
		{write("[SERVICE]\n    Flush 0.5\n" + out), 30*time.Second + 500*time.Millisecond},
		{yaml("service:\n  flush: 5\npipeline:\n  outputs:\n    - name: mongodb\n      match: '*'\n"), 31 * time.Second}, // service not read
	} {
		if got, err := DefaultLag(c.file, cfg, os.Getenv); err != nil || got != c.want {
			t.Errorf("%s: lag %v, %v; want %v", c.file, got, err, c.want)
		}
	}
	if _, err := DefaultLag(write("[SERVICE]\n    Flush soon\n"+out), cfg, os.Getenv); err == nil || !strings.Contains(err.Error(), `flush "soon"`) {
		t.Errorf("a flush of soon: %v, want an error naming it", err)
	}
}
