package serve

import (
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
		{[]string{"t.json"}, &Options{Paths: []string{"t.json"}, Host: "127.0.0.1", Port: 8080, Tries: 20, Top: driver.DefaultTop}},
		{[]string{"a", "b", "--host", "0.0.0.0", "--port", "0", "--port-tries", "3", "--top", "0"},
			&Options{Paths: []string{"a", "b"}, Host: "0.0.0.0", Port: 0, Tries: 3, Top: 0}},
		{[]string{"t.json", "--port", "70000"}, nil},
		{[]string{"t.json", "--port", "-1"}, nil},
		{[]string{"t.json", "--port-tries", "0"}, nil},
		{[]string{}, nil},
	} {
		clitest.CheckParse(t, newCmd, newOptions, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}

func newOptions(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }
