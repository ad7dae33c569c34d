package report

import (
	"reflect"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// TestParse: flags become Options; bad values, enum flags included, are
// usage errors (exit 2) before the command runs.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *Options
	}{
		{[]string{"run1"}, &Options{Paths: []string{"run1"}, Top: driver.DefaultTop}},
		{[]string{"a.json", "b.json", "-o", "r.html", "--title", "T", "--force", "--top", "3"},
			&Options{Paths: []string{"a.json", "b.json"}, HTML: "r.html", Title: "T", Force: true, Top: 3}},
		{[]string{"a.json", "--html", "old.html"}, &Options{Paths: []string{"a.json"}, HTML: "old.html", Top: driver.DefaultTop}},
		{[]string{"a.json", "--top", "-1"}, nil},
		{[]string{}, nil},
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
