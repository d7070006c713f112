package version

import (
	"runtime"
	"strings"
	"testing"
)

// Without -ldflags -X the version is dev, and String names the Go release
// and the platform.
func TestString(t *testing.T) {
	if Version != "dev" {
		t.Skipf("built with version %q set by -ldflags: the default is not what runs", Version)
	}
	s := String()
	if !strings.HasPrefix(s, "dev (") || !strings.Contains(s, runtime.Version()) || !strings.Contains(s, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("String() = %q", s)
	}
}
