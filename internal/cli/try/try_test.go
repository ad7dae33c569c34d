package try

import (
	"errors"
	"maps"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// The command's parsing, without running anything: changes are checked
// when parsed, and a bad one is bad usage.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args []string
		set  map[string]string // nil: must fail with usage
	}{
		{[]string{"--set", "num_workers=4", "train.py", "--epochs", "1"}, map[string]string{"num_workers": "4"}},
		{[]string{"--set", "threads=2", "--set", "gc_freeze=1", "-m", "pkg.train"}, map[string]string{"threads": "2", "gc_freeze": "true"}},
		{[]string{"--set", "workers=4", "train.py"}, nil},
		{[]string{"--set", "threads=0", "train.py"}, nil},
		{[]string{"train.py"}, nil},
		{[]string{"--set", "num_workers=4"}, nil},
		{[]string{"--set", "num_workers=4", "--steps", "2", "train.py"}, nil},
		{[]string{"--set", "num_workers=4", "--", "torchrun", "train.py"}, nil},
	} {
		ios, _, _, _ := iostreams.Test()
		o := &Options{IO: ios, Set: map[string]string{}}
		var got *Options
		cmd := newCmd(o, func(o *Options) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		var ec *exitcode.Error
		switch {
		case c.set == nil && err == nil:
			t.Errorf("%v: accepted", c.args)
		case c.set == nil && errors.As(err, &ec) && ec.Code != exitcode.Usage:
			t.Errorf("%v: exit %d, want usage", c.args, ec.Code)
		case c.set != nil && (err != nil || got == nil || !maps.Equal(got.Set, c.set)):
			t.Errorf("%v: %v, set %v; want %v", c.args, err, got, c.set)
		}
	}
}
