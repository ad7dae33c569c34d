package report

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
		{[]string{"run1"}, &Options{Paths: []string{"run1"}, Top: driver.DefaultTop}},
		{[]string{"a.json", "b.json", "-o", "r.html", "--title", "T", "--force", "--top", "3"},
			&Options{Paths: []string{"a.json", "b.json"}, HTML: "r.html", Title: "T", Force: true, Top: 3}},
		{[]string{"a.json", "--html", "old.html"}, &Options{Paths: []string{"a.json"}, HTML: "old.html", Top: driver.DefaultTop}},
		{[]string{"a.json", "--top", "-1"}, nil},
		{[]string{}, nil},
	} {
		clitest.CheckParse(t, newCmd, newOptions, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}

func newOptions(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }
