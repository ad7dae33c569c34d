package check

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// TestParse: flags become Options; bad values, enum flags included, are
// usage errors (exit 2) before the command runs.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *Options
	}{
		{[]string{"run1", "--budget", "b.toml"}, &Options{Path: "run1", Budget: "b.toml"}},
		{[]string{"run1", "--budget", "b.toml", "--json"}, &Options{Path: "run1", Budget: "b.toml", JSON: true}},
		{[]string{"run1"}, nil},
		{[]string{"run1", "run2", "--budget", "b.toml"}, nil},
		{[]string{"--budget", "b.toml"}, nil},
	} {
		clitest.CheckParse(t, newCmd, newOptions, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}

func newOptions(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }
