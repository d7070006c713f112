// Package version is the one place that holds the version of the plugin
// and of mongolog. The build sets it (make build and make dist do):
//
//	go build -ldflags "-X github.com/fluent-bit-out-mongodb/out_mongodb/version.Version=v1.2.0" ...
//
// A build without it says dev.
package version

import (
	"runtime"
)

// Version is the release the binary was built from: `git describe --tags
// --always --dirty` of its checkout, or dev.
var Version = "dev"

// String is the version with the Go release and platform it was built
// with, as the start-up line and `mongolog version` print it:
// "v1.2.0 (go1.26.8, linux/arm64)".
func String() string {
	return Version + " (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
