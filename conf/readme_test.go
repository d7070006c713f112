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

// The README is in the order its readers need: a table of contents that
// lists every section and subsection in order, then how to start, install
// and configure the plugin and query what it stored, before the document
// model and the delivery semantics; a note for users of
// fluent-plugin-mongo; and the delivery internals in a design document of
// their own, which the README links.
func TestReadmeOrder(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var headings, listed []string
	inContents, inFence := false, false
	for line := range strings.Lines(string(readme)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		switch {
		case inFence:
		case line == "## Contents":
			inContents = true
		case strings.HasPrefix(line, "## "), strings.HasPrefix(line, "### "):
			inContents = false
			headings = append(headings, strings.TrimLeft(line, "# "))
		case inContents && strings.Contains(line, "- ["):
			title, _, _ := strings.Cut(line[strings.Index(line, "- [")+3:], "](")
			listed = append(listed, title)
		}
	}
	if strings.Join(listed, "\n") != strings.Join(headings, "\n") {
		t.Errorf("the Contents list\n  %s\nwant every section in order\n  %s", strings.Join(listed, "\n  "), strings.Join(headings, "\n  "))
	}
	at := map[string]int{}
	for i, h := range headings {
		at[h] = i + 1
	}
	order := []string{"Quick start", "Install", "Configuration", "Querying from mongosh", "Coming from fluent-plugin-mongo", "Document model", "Delivery semantics"}
	for i, h := range order {
		if at[h] == 0 {
			t.Errorf("README has no section %q", h)
		} else if i > 0 && at[order[i-1]] > at[h] {
			t.Errorf("section %q comes before %q; want %s", order[i-1], h, strings.Join(order, ", "))
		}
	}
	if !strings.Contains(string(readme), "(docs/delivery.md)") {
		t.Error("README does not link the design document docs/delivery.md")
	}
	if _, err := os.Stat("../docs/delivery.md"); err != nil {
		t.Error(err)
	}
}
