package summarize

import (
	"reflect"
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
		code, got, stderr := clitest.Parse(newCmd, func(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }, tc.args...)
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
