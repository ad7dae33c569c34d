package export

import (
	"reflect"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/export"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// TestParse: flags become Options; bad values, enum flags included
// (--format, --stacks, --table, --role), and output that cannot work
// (csv with neither a table nor a directory, binary pprof to a terminal)
// are usage errors (exit 2) before the command runs.
func TestParse(t *testing.T) {
	base := Options{Rank: -1, MaxEvents: export.DefaultMaxEvents, Top: driver.DefaultTop}
	with := func(f func(o *Options)) *Options { o := base; f(&o); return &o }
	for _, tc := range []struct {
		args []string
		tty  bool
		want *Options
	}{
		{args: []string{"t.json", "-f", "folded"}, want: with(func(o *Options) { o.Path, o.Format = "t.json", "folded" })},
		{args: []string{"run1", "--format", "speedscope", "-o", "s.json", "--stacks", "python", "--role", "pin_memory", "--rank", "2"},
			want: with(func(o *Options) {
				o.Path, o.Format, o.Output, o.Stacks, o.Role, o.Rank = "run1", "speedscope", "s.json", "python", "pin_memory", 2
			})},
		{args: []string{"t.json", "-f", "chrome", "--max-events", "10", "--min-duration", "2.5"},
			want: with(func(o *Options) { o.Path, o.Format, o.MaxEvents, o.MinDurationUs = "t.json", "chrome", 10, 2.5 })},
		{args: []string{"t.json", "-f", "svg", "--max-nodes", "100"}, want: with(func(o *Options) { o.Path, o.Format, o.MaxNodes = "t.json", "svg", 100 })},
		{args: []string{"t.json", "-f", "csv", "--table", "kernels", "--top", "0"},
			want: with(func(o *Options) { o.Path, o.Format, o.Table, o.Top = "t.json", "csv", "kernels", 0 })},
		{args: []string{"t.json", "-f", "csv", "-o", "dir"}, want: with(func(o *Options) { o.Path, o.Format, o.Output = "t.json", "csv", "dir" })},
		{args: []string{"t.json", "-f", "pprof"}, want: with(func(o *Options) { o.Path, o.Format = "t.json", "pprof" })}, // stdout not a terminal
		{args: []string{"t.json", "-f", "pprof", "-o", "p.pb.gz"}, tty: true, want: with(func(o *Options) { o.Path, o.Format, o.Output = "t.json", "pprof", "p.pb.gz" })},
		{args: []string{"t.json", "-f", "pprof"}, tty: true},
		{args: []string{"t.json"}},
		{args: []string{"t.json", "-f", "png"}},
		{args: []string{"t.json", "-f", "folded", "--stacks", "gpu"}},
		{args: []string{"t.json", "-f", "folded", "--role", "worker_thread"}},
		{args: []string{"t.json", "-f", "csv", "--table", "nope"}},
		{args: []string{"t.json", "-f", "csv"}},
		{args: []string{"t.json", "-f", "chrome", "--min-duration", "-1"}},
		{args: []string{"a", "b", "-f", "folded"}},
	} {
		code, got, stderr := clitest.Parse(newCmd, func(ios *iostreams.IOStreams) *Options {
			ios.SetTTY(tc.tty, false)
			return &Options{IO: ios}
		}, tc.args...)
		if tc.want == nil {
			if code != 2 || got != nil {
				t.Errorf("%q (tty %v): exit %d, ran %v; want 2 before running (%s)", tc.args, tc.tty, code, got != nil, stderr)
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
