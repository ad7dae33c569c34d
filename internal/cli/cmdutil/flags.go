// Package cmdutil holds what several commands share when they declare
// their flags.
package cmdutil

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
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

// intRange is an int flag that accepts only min..max.
type intRange struct {
	p        *int
	min, max int
}

func (v *intRange) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	if n < v.min || n > v.max {
		if v.max == math.MaxInt {
			return fmt.Errorf("want %d or more", v.min)
		}
		return fmt.Errorf("want %d to %d", v.min, v.max)
	}
	*v.p = n
	return nil
}

func (v *intRange) String() string { return strconv.Itoa(*v.p) }
func (v *intRange) Type() string   { return "int" }

// IntRangeFlag defines an int flag that accepts only min..max: a value
// out of range is a usage error when the flags are parsed (exit 2), as
// StringEnumFlag's. def need not be in range (-1: "not given").
func IntRangeFlag(cmd *cobra.Command, p *int, name string, def, min, max int, usage string) {
	*p = def
	cmd.Flags().Var(&intRange{p: p, min: min, max: max}, name, usage)
}

// NonNegativeIntFlag is IntRangeFlag for 0 or more.
func NonNegativeIntFlag(cmd *cobra.Command, p *int, name string, def int, usage string) {
	IntRangeFlag(cmd, p, name, def, 0, math.MaxInt, usage)
}

// nonNegativeFloat is a float flag that accepts only finite values >= 0.
type nonNegativeFloat struct{ p *float64 }

func (v *nonNegativeFloat) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return errors.New("want a number, 0 or more")
	}
	*v.p = f
	return nil
}

func (v *nonNegativeFloat) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *nonNegativeFloat) Type() string   { return "float" }

// NonNegativeFloatFlag defines a float flag that accepts only finite
// values >= 0, checked when the flags are parsed.
func NonNegativeFloatFlag(cmd *cobra.Command, p *float64, name string, def float64, usage string) {
	*p = def
	cmd.Flags().Var(&nonNegativeFloat{p: p}, name, usage)
}
