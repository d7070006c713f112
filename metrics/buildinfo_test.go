package metrics

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/version"
)

// out_mongodb_build_info is 1 with the version the binary was built with
// and its Go release, from the start, and the README's metrics table says so.
func TestBuildInfo(t *testing.T) {
	fams, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() != "out_mongodb_build_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["version"] != version.Version || labels["goversion"] != runtime.Version() || m.GetGauge().GetValue() != 1 {
				t.Errorf("out_mongodb_build_info %v = %v, want version %q goversion %q = 1", labels, m.GetGauge().GetValue(), version.Version, runtime.Version())
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no out_mongodb_build_info series")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "| `out_mongodb_build_info{version, goversion}` | gauge |") {
		t.Error("README's metrics table has no row for out_mongodb_build_info{version, goversion}")
	}
}
