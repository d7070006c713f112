package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// mongologCommand builds the mongolog command from the tree for t and
// returns a function that runs it with args, returning what it wrote and
// its exit status.
func mongologCommand(t *testing.T) func(args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mongolog")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mongolog")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building mongolog: %v\n%s", err, out)
	}
	return func(args ...string) (string, string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("running mongolog %v: %v", args, err)
		}
		return out.String(), errOut.String(), code
	}
}

// target are the flags that point mongolog at collection coll of e's
// database.
func (e *env) target(coll string) []string {
	return []string{"--uri", e.srv.URI, "--database", e.dbName, "--collection", coll}
}
