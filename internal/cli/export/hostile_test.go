package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/pprof/profile"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
)

// hostileTrace holds names and arguments with control characters (ESC,
// BEL, NUL, C1), quotes, backslashes, markup, spreadsheet formulas and
// invalid UTF-8 (raw bytes), both as JSON escapes and raw where the
// reader accepts them.
func hostileTrace(t *testing.T) string {
	const evil = `\u001b[31m\u0007\u0000\u009b2J \"q\" \\ <script>alert(1)</script>&amp; ;x`
	body := `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::mm` + evil + `","pid":1,"tid":1,"ts":30,"dur":100,"args":{"External id":2,"Input Dims":[[2,2]],"s":"` + evil + `","o":{"k":"` + evil + `"}}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":40,"dur":20,"args":{"External id":2,"correlation":7}},
{"ph":"X","cat":"kernel","name":"=gemm` + evil + `","pid":0,"tid":7,"ts":70,"dur":30,"args":{"correlation":7,"device":0,"stream":7,"bad":"\u0001\u0002"}},
{"ph":"X","cat":"cpu_op","name":"bad` + "\xff\xfe\xc3\x28" + `utf8","pid":1,"tid":1,"ts":200,"dur":100,"args":{"x":"` + "\xc3\x28\xff" + `"}}
]}`
	p := filepath.Join(t.TempDir(), "hostile.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rawControl finds a control byte (other than the line breaks and tabs of
// the format's own layout), a C1 control character (text formats; JSON
// allows them in strings, escaped or not) or invalid UTF-8.
func rawControl(b []byte, c1 bool) string {
	if !utf8.Valid(b) {
		return "invalid UTF-8"
	}
	for _, r := range string(b) {
		if (r < 0x20 && r != '\n' && r != '\t' && r != '\r') || r == 0x7f || (c1 && r >= 0x80 && r < 0xa0) {
			return fmt.Sprintf("control character %U", r)
		}
	}
	return ""
}

func TestExportHostileNames(t *testing.T) {
	path := hostileTrace(t)
	dir := t.TempDir()
	export := func(t *testing.T, args ...string) []byte {
		t.Helper()
		code, stdout, stderr := clitest.Run(NewCmd, append([]string{path}, args...)...)
		if code != exitcode.OK && code != exitcode.Partial {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if len(args) > 3 && args[2] == "-o" && args[1] != "csv" {
			b, err := os.ReadFile(args[3])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		return []byte(stdout)
	}
	t.Run("json", func(t *testing.T) {
		for _, f := range []string{"perfetto", "chrome", "speedscope"} {
			b := export(t, "-f", f)
			if !json.Valid(b) {
				t.Errorf("%s: not valid JSON: %.300s", f, b)
			}
			if bad := rawControl(b, false); bad != "" {
				t.Errorf("%s: %s in the output", f, bad)
			}
		}
		// The names survive, escaped: the reader gets back what the trace held.
		var doc struct {
			TraceEvents []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"traceEvents"`
		}
		if err := json.Unmarshal(export(t, "-f", "chrome"), &doc); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range doc.TraceEvents {
			if strings.HasPrefix(ev.Name, "aten::mm") {
				found = true
				if !strings.Contains(ev.Name, "\x1b[31m\a\x00") || ev.Args["s"] != ev.Name[len("aten::mm"):] {
					t.Errorf("name or argument changed: %q %q", ev.Name, ev.Args["s"])
				}
			}
		}
		if !found {
			t.Error("aten::mm is not in the chrome export")
		}
	})
	t.Run("folded", func(t *testing.T) {
		b := export(t, "-f", "folded")
		if bad := rawControl(b, true); bad != "" {
			t.Errorf("%s in %q", bad, b)
		}
		line := regexp.MustCompile(`^[^;\n]+(;[^;\n]+)* [0-9]+$`)
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !line.MatchString(l) {
				t.Errorf("not a folded stack: %q", l)
			}
		}
		if !bytes.Contains(b, []byte("aten::mm?[31m???2J")) {
			t.Errorf("the op's frame is missing or not escaped: %q", b)
		}
	})
	t.Run("svg", func(t *testing.T) {
		b := export(t, "-f", "svg")
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("not well-formed XML: %v", err)
			}
		}
		if bytes.Contains(b, []byte("<script")) {
			t.Error("markup from a name is in the SVG")
		}
	})
	t.Run("markdown", func(t *testing.T) {
		b := export(t, "-f", "markdown")
		if bad := rawControl(b, true); bad != "" {
			t.Errorf("%s in the Markdown", bad)
		}
		if bytes.Contains(b, []byte("<script")) {
			t.Error("markup from a name is in the Markdown")
		}
	})
	t.Run("csv", func(t *testing.T) {
		out := filepath.Join(dir, "tables")
		export(t, "-f", "csv", "-o", out)
		names, _ := filepath.Glob(filepath.Join(out, "*.csv"))
		if len(names) == 0 {
			t.Fatal("no tables")
		}
		for _, n := range append(names, "stdout") {
			var b []byte
			if n == "stdout" {
				b = export(t, "-f", "csv", "--table", "kernels")
			} else {
				b, _ = os.ReadFile(n)
			}
			if bad := rawControl(b, true); bad != "" {
				t.Errorf("%s: %s", filepath.Base(n), bad)
			}
			recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(n), err)
			}
			for _, r := range recs {
				for _, c := range r {
					if strings.HasPrefix(c, "=") {
						t.Errorf("%s: a formula cell %q", filepath.Base(n), c)
					}
				}
			}
		}
	})
	t.Run("pprof", func(t *testing.T) {
		for _, stacks := range []string{"ops", "device"} {
			out := filepath.Join(dir, stacks+".pprof")
			b := export(t, "-f", "pprof", "-o", out, "--stacks", stacks)
			p, err := profile.Parse(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, f := range p.Function {
				all = append(all, f.Name, f.SystemName, f.Filename)
			}
			all = append(all, p.Comments...)
			for _, s := range all {
				if bad := rawControl([]byte(s), true); bad != "" {
					t.Errorf("%s: %s in %q", stacks, bad, s)
				}
			}
		}
	})
}
