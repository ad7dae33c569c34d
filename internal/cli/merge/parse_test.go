package merge

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
		{[]string{"s.jsonl"}, &Options{Paths: []string{"s.jsonl"}}},
		{[]string{"a", "b", "--json", "--world-size", "8", "--workers", "2"}, &Options{Paths: []string{"a", "b"}, JSON: true, WorldSize: 8, Workers: 2}},
		{[]string{"a", "--world-size", "-1"}, nil},
		{[]string{"a", "--workers", "x"}, nil},
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
