package diff

import (
	"reflect"
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
		code, got, stderr := clitest.Parse(newCmd, newOptions, tc.args...)
		if tc.want == nil {
			if code != 2 || got != nil {
				t.Errorf("%q: exit %d, ran %v; want 2 before running (%s)", tc.args, code, got != nil, stderr)
			}
			continue
		}
		if code != 0 || got == nil {
			t.Errorf("%q: exit %d: %s", tc.args, code, stderr)
			continue
		}
		got.IO = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: options\n %+v, want\n %+v", tc.args, *got, *tc.want)
		}
	}
}

func newOptions(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }
