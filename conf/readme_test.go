package conf

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's configuration table documents every key with its default and
// its meaning as the key table gives them (ranges included), so the README,
// mongolog and the checks say the same.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		def := "(unset)"
		if k.Default != "" {
			def = "`" + k.Default + "`"
		}
		head := "| `" + k.Key + "` | " + def + " |"
		row := head + " " + strings.ReplaceAll(k.Meaning, "|", `\|`) + " |"
		switch {
		case !strings.Contains(string(readme), head):
			t.Errorf("README lacks the row %q", row)
		case !strings.Contains(string(readme), row+"\n"):
			t.Errorf("README's row for %s differs from the key table; want\n%s", k.Key, row)
		}
	}
}

// The README's Development section names every package of the module.
func TestReadmeNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, dev, _ := strings.Cut(string(readme), "## Development\n")
	dev, _, _ = strings.Cut(dev, "\n```\n\n")
	named := map[string]bool{}
	for _, line := range strings.Split(dev, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasSuffix(f[0], "/") {
			named[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if rel == "test" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "build" {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 && rel != "." && !named[filepath.ToSlash(rel)] {
			t.Errorf("README's Development section does not name package %s/", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(named) < 10 {
		t.Errorf("README's Development section names %d packages: %v", len(named), named)
	}
}
