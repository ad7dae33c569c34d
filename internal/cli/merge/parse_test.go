package merge

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// TestParse: flags become Options; bad values are usage errors (exit 2)
// before the command runs.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *Options
	}{
		{[]string{"s.jsonl"}, &Options{Paths: []string{"s.jsonl"}}},
		{[]string{"a", "b", "--json", "--world-size", "8", "--workers", "2"}, &Options{Paths: []string{"a", "b"}, JSON: true, WorldSize: 8, Workers: 2}},
		{[]string{"a", "--world-size", "-1"}, nil},
		{[]string{"a", "--workers", "x"}, nil},
		{[]string{}, nil},
	} {
		clitest.CheckParse(t, newCmd, func(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}
