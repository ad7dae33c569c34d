package repro

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Options
		code int
	}{
		{args: []string{"run1"}, want: Options{Path: "run1", Top: 3}},
		{args: []string{"t.json", "--op", "aten::conv2d", "-o", "out"}, want: Options{Path: "t.json", Op: "aten::conv2d", Top: 3, Out: "out"}},
		{args: []string{"t.json", "--top", "5"}, want: Options{Path: "t.json", Top: 5}},
		{args: []string{"t.json", "--top", "0"}, code: 2},
		{args: []string{"t.json", "--op", "aten::mm", "--top", "2"}, code: 2},
		{args: []string{}, code: 2},
	} {
		var got *Options
		newCmdT := func(ios *iostreams.IOStreams) *cobra.Command {
			return newCmd(&Options{IO: ios}, func(o *Options) error { got = o; return nil })
		}
		code, _, stderr := clitest.Run(newCmdT, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d (%s), want %d", tc.args, code, stderr, tc.code)
			continue
		}
		if code != 0 {
			continue
		}
		got.IO = nil
		if *got != tc.want {
			t.Errorf("%v: options %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

// TestOpWithoutShapesFails: an op without recorded shapes is an error
// (exit 1) naming the trace and the op; the other op's script is still
// written and listed.
func TestOpWithoutShapesFails(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.json")
	body := `{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":900},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":1000,"dur":100,"args":{"Input Dims":[[4,4]],"Input type":["float"],"Input Strides":[[4,1]],"Concrete Inputs":[""]}}]}`
	if err := os.WriteFile(tr, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := clitest.Run(NewCmd, tr, "-o", out)
	if code != 1 || !strings.Contains(stderr, tr) || !strings.Contains(stderr, "'aten::mm'") || !strings.Contains(stderr, "no recorded input shapes") {
		t.Errorf("exit %d, stderr %q; want 1 naming trace and op", code, stderr)
	}
	if !strings.Contains(stdout, filepath.Join(out, "2_relu.py")) {
		t.Errorf("stdout %q does not list relu's script", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "2_relu.py")); err != nil {
		t.Error(err)
	}
	// --op of an op the trace lacks: exit 1.
	if code, _, stderr := clitest.Run(NewCmd, tr, "-o", out, "--op", "aten::bmm"); code != 1 || !strings.Contains(stderr, "no op named 'aten::bmm'") {
		t.Errorf("--op aten::bmm: exit %d, %q", code, stderr)
	}
	// Only the op with shapes: exit 0.
	if code, _, stderr := clitest.Run(NewCmd, tr, "-o", out, "--op", "aten::relu"); code != 0 {
		t.Errorf("--op aten::relu: exit %d, %q", code, stderr)
	}
}
