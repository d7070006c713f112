//go:build probedeps

package harness

// testdata/probe needs fluent-bit-go, but go mod tidy skips testdata: this
// file (never built, the tag is never set) keeps the requirement in go.mod.
import _ "github.com/fluent/fluent-bit-go/output"
