package cmdutil

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestStringEnumFlag(t *testing.T) {
	var v string
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	StringEnumFlag(cmd, &v, "color", "c", "auto", []string{"auto", "never", "always"}, "when to color")
	if v != "auto" {
		t.Fatalf("default %q", v)
	}
	if !strings.Contains(cmd.Flags().Lookup("color").Usage, "{auto|never|always}") {
		t.Errorf("usage %q lacks the choices", cmd.Flags().Lookup("color").Usage)
	}
	if err := cmd.ParseFlags([]string{"--color", "always"}); err != nil || v != "always" {
		t.Fatalf("always: %v %q", err, v)
	}
	err := cmd.ParseFlags([]string{"-c", "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "auto, never, always") || v != "always" {
		t.Fatalf("bad value: err %v, value %q", err, v)
	}
}

func TestRenamedFlags(t *testing.T) {
	var out string
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file")
	RenamedFlags(cmd, map[string]string{"html": "output"})
	for _, args := range [][]string{{"--html", "a"}, {"--output", "a"}, {"-o", "a"}} {
		out = ""
		if err := cmd.ParseFlags(args); err != nil || out != "a" {
			t.Errorf("%v: %v, output %q", args, err, out)
		}
	}
}
