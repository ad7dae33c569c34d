package repro

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
)

// runtimePy is the part of every script that does not depend on the op:
// building tensors, binding the arguments to an overload, timing, the
// variants and the printout.
//
//go:embed runtime.py
var runtimePy string

// Settings are the recorded run's backend settings that change an op's
// speed (env.json's torch flags and thread count); zero values are
// unknown and left at torch's defaults.
type Settings struct {
	// Source names where they came from (the env.json path); "" none.
	Source               string
	MatmulAllowTF32      *bool
	CudnnAllowTF32       *bool
	CudnnBenchmark       *bool
	Float32MatmulPrecise string // highest, high or medium
	NumThreads           int
}

// SettingsFromEnv reads the torch flags of env.json's process tag (e.g.
// "rank0"; the first process when it has none of that name).
func SettingsFromEnv(env json.RawMessage, source, tag string) Settings {
	var doc struct {
		Processes map[string]struct {
			Torch struct {
				NumThreads int `json:"num_threads"`
				Flags      struct {
					MatmulAllowTF32        *bool  `json:"matmul_allow_tf32"`
					CudnnAllowTF32         *bool  `json:"cudnn_allow_tf32"`
					CudnnBenchmark         *bool  `json:"cudnn_benchmark"`
					Float32MatmulPrecision string `json:"float32_matmul_precision"`
				} `json:"flags"`
			} `json:"torch"`
		} `json:"processes"`
	}
	if len(env) == 0 || json.Unmarshal(env, &doc) != nil || len(doc.Processes) == 0 {
		return Settings{}
	}
	p, ok := doc.Processes[tag]
	if !ok {
		tags := make([]string, 0, len(doc.Processes))
		for k := range doc.Processes {
			tags = append(tags, k)
		}
		slices.Sort(tags)
		p = doc.Processes[tags[0]]
	}
	f := p.Torch.Flags
	s := Settings{Source: source, MatmulAllowTF32: f.MatmulAllowTF32, CudnnAllowTF32: f.CudnnAllowTF32, CudnnBenchmark: f.CudnnBenchmark, NumThreads: max(p.Torch.NumThreads, 0)}
	switch f.Float32MatmulPrecision {
	case "highest", "high", "medium":
		s.Float32MatmulPrecise = f.Float32MatmulPrecision
	}
	return s
}

func (s Settings) python() string {
	var parts []string
	add := func(name string, b *bool) {
		if b != nil {
			parts = append(parts, fmt.Sprintf("%s: %s", pyStr(name), pyBool(*b)))
		}
	}
	add("matmul_allow_tf32", s.MatmulAllowTF32)
	add("cudnn_allow_tf32", s.CudnnAllowTF32)
	add("cudnn_benchmark", s.CudnnBenchmark)
	if s.Float32MatmulPrecise != "" {
		parts = append(parts, fmt.Sprintf("%s: %s", pyStr("float32_matmul_precision"), pyStr(s.Float32MatmulPrecise)))
	}
	if s.NumThreads > 0 {
		parts = append(parts, fmt.Sprintf("%s: %d", pyStr("num_threads"), s.NumThreads))
	}
	if len(parts) == 0 {
		return "{}"
	}
	return "{\n    " + strings.Join(parts, ",\n    ") + ",\n}"
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func pyFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// variants are the changes worth timing for an op (runtime.py's variant).
func variants(op string) []string {
	_, name, _ := strings.Cut(op, "::")
	fast := []string{"tf32", "autocast_bf16", "autocast_fp16"}
	switch {
	case isConvolution(op):
		return append([]string{"channels_last"}, fast...)
	case slices.Contains([]string{"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "einsum"}, name),
		strings.Contains(name, "scaled_dot_product"):
		return fast
	}
	return nil
}

var convRE = regexp.MustCompile(`^(conv(_transpose)?[123]d|_?convolution|[a-z_]+_convolution(_transpose)?)$`)

// isConvolution: aten::conv2d, aten::convolution, aten::cudnn_convolution...
func isConvolution(op string) bool {
	_, name, _ := strings.Cut(op, "::")
	return convRE.MatchString(name)
}

func (g *gen) source(sc Script, args, notes []string, cost flops.Cost, hasCost bool) []byte {
	var b strings.Builder
	ns, name, _ := strings.Cut(sc.Op, "::")
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("#!/usr/bin/env python3\n")
	w("# Rebuilds and times one op of a PyTorch profiler trace; written by `bottleneck repro`.\n")
	w("#\n")
	w("# op:     %s\n", pyStr(sc.Op))
	w("# trace:  %s\n", pyStr(g.t.Path))
	w("# calls:  %d with these inputs, of %d calls of the op in the trace\n", sc.Calls, sc.AllCalls)
	w("# time:   %s per call in the trace (mean %s time%s)\n", fmtUs(sc.TraceUs), sc.TimeKind, map[bool]string{true: ": the kernels it launched", false: ": its CPU duration, children included"}[sc.TimeKind == "device"])
	w("# inputs: the trace's Input Dims, Input type, Input Strides and Concrete Inputs;\n")
	w("#         tensor values are random (integer and bool tensors zeros), storage offset 0.\n")
	for _, n := range notes {
		w("#         %s.\n", n)
	}
	if g.settings.Source != "" {
		w("# settings: from %s\n", pyStr(g.settings.Source))
	} else {
		w("# settings: none recorded (a trace file without its run directory): torch's defaults\n")
	}
	w("# Autocast is not recorded: the dtypes are those the op received.\n")
	w("#\n# Usage: python %s [--device cpu|cuda] [--min-time SECONDS]\n", sc.FileName)
	w("import argparse\nimport json\nimport statistics\n\nimport torch\nimport torch.utils.benchmark as benchmark\n\n")
	w("OP = %s\n", pyStr(sc.Op))
	w("OP_NAMESPACE, OP_NAME = %s, %s  # called as torch.ops.<namespace>.<name>\n", pyStr(ns), pyStr(name))
	w("CONVOLUTION = %s  # TF32 for it is cuDNN's flag, else cuBLAS's\n", pyBool(isConvolution(sc.Op)))
	w("DEVICE = %s\n", pyStr(sc.Device))
	w("TRACE_US = %s  # mean per call in the trace, µs\n", pyFloat(sc.TraceUs))
	w("TRACE_TIME_KIND = %s\n", pyStr(sc.TimeKind))
	w("CALLS = %d\n", sc.Calls)
	if hasCost {
		w("FLOPS = %s  # per call, from the input shapes (bottleneck's roofline)\n", pyFloat(cost.Flops))
		w("BYTES = %s  # minimum bytes per call: each input read once, the output written once\n", pyFloat(cost.Bytes))
	} else {
		w("FLOPS = None  # bottleneck's roofline counts matmul, convolution and attention only\nBYTES = None\n")
	}
	peak, ok := flops.PeakFor(g.device)
	if sc.Device == "cuda" && ok {
		w("PEAK_DEVICE = %s  # the trace's device; peaks are dense TFLOP/s from its data sheet\n", pyStr(peak.Name))
		w("PEAK_TFLOPS = {'fp64': %s, 'fp32': %s, 'tf32': %s, 'fp16': %s, 'bf16': %s}\n",
			pyFloat(peak.FP64), pyFloat(peak.FP32), pyFloat(peak.TF32), pyFloat(peak.FP16), pyFloat(peak.BF16))
		w("BANDWIDTH_GBS = %s\n", pyFloat(peak.BandwidthGBs))
	} else {
		w("PEAK_DEVICE = %s  # no peak known for it\nPEAK_TFLOPS = {}\nBANDWIDTH_GBS = None\n", pyStr(cmpOr(g.device, sc.Device)))
	}
	vs := variants(sc.Op)
	quoted := make([]string, len(vs))
	for i, v := range vs {
		quoted[i] = pyStr(v)
	}
	w("VARIANTS = [%s]\n", strings.Join(quoted, ", "))
	w("SETTINGS = %s  # the recorded run's backend settings\n\n\n", g.settings.python())
	w("def inputs(device):\n    \"\"\"The op's arguments as the trace recorded them.\"\"\"\n    return [\n")
	for _, a := range args {
		w("        %s,\n", a)
	}
	w("    ]\n\n")
	b.WriteString(runtimePy)
	return []byte(b.String())
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func fmtUs(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.3f ms", us/1000)
	}
	return fmt.Sprintf("%.1f µs", us)
}
