package diff

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
		{[]string{"a", "b"}, &Options{Base: "a", New: "b", Top: 10}},
		{[]string{"a", "b", "--json", "--markdown", "-", "--html", "d.html", "--fail-if", "step_time > +5%", "--fail-if", "verdict changed", "--top", "3"},
			&Options{Base: "a", New: "b", JSON: true, Markdown: "-", HTML: "d.html", FailIf: []string{"step_time > +5%", "verdict changed"}, Top: 3}},
		{[]string{"a", "b", "--fail-if", "step_time >> 5"}, nil},
		{[]string{"a", "b", "--fail-if", "no_such_metric > 1"}, nil},
		{[]string{"a", "b", "--top", "-1"}, nil},
		{[]string{"a"}, nil},
	} {
		clitest.CheckParse(t, newCmd, newOptions, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}

func newOptions(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }
