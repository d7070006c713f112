package conf

import (
	"os"
	"strings"
	"testing"
)

// The README's configuration table documents every key with its default.
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
		row := "| `" + k.Key + "` | " + def + " |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README lacks the row %q", row)
		}
	}
}
