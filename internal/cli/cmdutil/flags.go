// Package cmdutil holds what several commands share when they declare
// their flags.
package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// enumValue is a string flag that accepts only its choices.
type enumValue struct {
	p       *string
	choices []string
}

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.choices, s) {
		return fmt.Errorf("want one of %s", strings.Join(e.choices, ", "))
	}
	*e.p = s
	return nil
}

func (e *enumValue) String() string { return *e.p }
func (e *enumValue) Type() string   { return "string" }

// StringEnumFlag defines a string flag that accepts only choices (as gh's
// cmdutil.StringEnumFlag): a bad value is a usage error when the flags are
// parsed, the choices are listed in the help and offered by shell
// completion. def is the default ("" allowed when not among choices: the
// flag was not given).
func StringEnumFlag(cmd *cobra.Command, p *string, name, shorthand, def string, choices []string, usage string) {
	*p = def
	cmd.Flags().VarP(&enumValue{p: p, choices: choices}, name, shorthand, fmt.Sprintf("%s: {%s}", usage, strings.Join(choices, "|")))
	_ = cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return choices, cobra.ShellCompDirectiveNoFileComp
	})
}

// RenamedFlags keeps old flag names working: each key of old is read as
// the flag it maps to (the help shows only the new name).
func RenamedFlags(cmd *cobra.Command, old map[string]string) {
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := old[name]; ok {
			name = n
		}
		return pflag.NormalizedName(name)
	})
}
