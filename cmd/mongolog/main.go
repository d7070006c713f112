// Command mongolog checks the plugin's configuration in a Fluent Bit
// configuration file and reads what the plugin stored. Its subcommands and
// exit codes are in package mongolog/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}
