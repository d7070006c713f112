// Package cli is the mongolog command line: its subcommands, their flags,
// and the one mapping of what they return to an exit code (ExitCode). It
// writes only to the streams it is given, reads the environment through
// the function it is given, and never exits the process, so that tests run
// it in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Env is what a run of mongolog reads and writes besides its arguments.
type Env struct {
	Stdin          io.Reader // what import reads for "-"
	Stdout, Stderr io.Writer
	Getenv         func(string) string // the environment (${VAR} in configurations, uri_env)
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Run runs mongolog with args (without the program name) and returns its
// exit code; an error is printed to Stderr as "mongolog: ..." first. ctx
// ending (Ctrl-C) stops the command.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Stdin == nil {
		env.Stdin = os.Stdin
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	root := NewRoot(env)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var problems *ProblemsError
	if err != nil && !errors.As(err, &problems) { // the findings are printed already
		fmt.Fprintln(env.Stderr, "mongolog:", err)
	}
	return ExitCode(err)
}

// NewRoot is the mongolog command with its subcommands, writing to env's
// streams.
func NewRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "mongolog",
		Short: "Check out_mongodb configurations and read the logs it stored",
		Long: "mongolog checks the mongodb outputs of a Fluent Bit configuration with the plugin's own rules, and\n" +
			"reads back what the plugin stored: query (and follow), stats, verify, prune, export; import stores log\n" +
			"files through the plugin's pipeline; doctor checks retention where the outputs write.\n\n" + exitHelp(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetGlobalNormalizationFunc(oneSpelling)
	root.AddCommand(checkCommand(env), queryCommand(env), verifyCommand(env), statsCommand(env), pruneCommand(env), importCommand(env),
		doctorCommand(env), exportCommand(env), versionCommand())
	return root
}

// oneSpelling makes every flag take '-' and '_' alike (--dry-run is
// --dry_run, --bucket-key is --bucket_key): a flag is known by its name
// with '_', the plugin keys' spelling, and that is how help shows it.
func oneSpelling(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
}
