package analyze

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// TestParse: flags become Options; bad values, enum flags included, are
// usage errors (exit 2) before the command runs.
func TestParse(t *testing.T) {
	def := string(driver.DefaultDefinition)
	for _, tc := range []struct {
		args []string
		want *Options
	}{
		{[]string{"t.json"}, &Options{Paths: []string{"t.json"}, Top: driver.DefaultTop, Rank: -1, Def: def}},
		{[]string{"--json", "--full", "--top", "5", "--sort", "host_self", "--group-by-shape", "--group-by-stack", "3",
			"--steps", "2-4", "--rank", "1", "--definition", "tb", "a.json", "b"},
			&Options{Paths: []string{"a.json", "b"}, JSON: true, Full: true, Top: 5, SortBy: "host_self", Shapes: true, Stack: 3,
				Steps: "2-4", Rank: 1, Def: "tb"}},
		{[]string{"--steps", "7", "t.json"}, &Options{Paths: []string{"t.json"}, Top: driver.DefaultTop, Rank: -1, Def: def, Steps: "7"}},
		{[]string{"--sort", "bogus", "t.json"}, nil},
		{[]string{"--definition", "nsys", "t.json"}, nil},
		{[]string{"--steps", "4-2", "t.json"}, nil},
		{[]string{"--steps", "x", "t.json"}, nil},
		{[]string{"--top", "-1", "t.json"}, nil},
		{[]string{"--rank", "-2", "t.json"}, nil},
		{[]string{"--group-by-stack", "-1", "t.json"}, nil},
		{[]string{"--no-such-flag", "t.json"}, nil},
		{[]string{}, nil},
	} {
		clitest.CheckParse(t, newCmd, func(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}
