package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testedVersion is the Fluent Bit version the README says the plugin is
// tested with.
func testedVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`Tested with Fluent Bit \*\*([0-9]+\.[0-9]+\.[0-9]+)\*\*`).FindStringSubmatch(readme(t))
	if m == nil {
		t.Fatal("README names no tested Fluent Bit version (`Tested with Fluent Bit **x.y.z**`)")
	}
	return m[1]
}

// A fluent-bit on PATH, which the end-to-end tests run, is the version the
// README says the plugin is tested with.
func TestFluentBitOnPathIsTheTestedVersion(t *testing.T) {
	fb, err := exec.LookPath("fluent-bit")
	if err != nil {
		t.Skip("no fluent-bit on PATH: the end-to-end tests that need one skip as well")
	}
	out, err := exec.Command(fb, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", fb, err, out)
	}
	m := regexp.MustCompile(`Fluent Bit v([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version printed %q", fb, out)
	}
	if want := testedVersion(t); string(m[1]) != want {
		t.Errorf("fluent-bit on PATH is %s; README says the plugin is tested with %s", m[1], want)
	}
}
