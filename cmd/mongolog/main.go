// Command mongolog checks the plugin's configuration in a Fluent Bit
// configuration file and reads what the plugin stored.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

func main() {
	root := &cobra.Command{
		Use:           "mongolog",
		Short:         "Check out_mongodb configurations and read the logs it stored",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(checkCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mongolog:", err)
		os.Exit(2)
	}
}

func checkCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "check -c FILE",
		Short: "Validate every mongodb output of a Fluent Bit configuration (classic or YAML) with the plugin's own rules",
		Long: "check reads a Fluent Bit configuration (classic, with @INCLUDE and @SET, or YAML), validates every\n" +
			"[OUTPUT] whose Name is mongodb as the plugin does at start, names unknown keys with the key they\n" +
			"resemble, and exits 1 on any problem.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			problems, err := mongolog.Check(cmd.OutOrStdout(), file, os.Getenv)
			if err != nil {
				return err
			}
			if problems > 0 {
				os.Exit(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "Fluent Bit configuration file")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
