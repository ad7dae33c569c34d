package summarize

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
		{[]string{"t.json"}, &Options{Paths: []string{"t.json"}}},
		{[]string{"a", "b", "-o", "out/", "--host", "node7", "--workers", "3"}, &Options{Paths: []string{"a", "b"}, Out: "out/", Host: "node7", Workers: 3}},
		{[]string{"a", "--workers", "-1"}, nil},
		{[]string{}, nil},
	} {
		clitest.CheckParse(t, newCmd, func(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}
