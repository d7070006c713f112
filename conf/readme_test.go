package conf

import (
	"os"
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
