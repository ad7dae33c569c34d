package diff

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
)

func TestNormaliseKernel(t *testing.T) {
	for in, want := range map[string]string{
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)": "at::native::vectorized_elementwise_kernel",
		"triton_poi_fused_add_mul_0":                         "triton_poi_fused_add_mul",
		"triton_poi_fused_add_mul_12":                        "triton_poi_fused_add_mul",
		"fmha_cutlassF_f16_aligned_64x64_rf_sm80_3f4a9c0b12": "fmha_cutlassF_f16_aligned_64x64_rf_sm80",
		"Memcpy HtoD (Pinned -> Device)":                     "Memcpy HtoD",
		"ampere_sgemm_128x64_nn":                             "ampere_sgemm_128x64_nn",
		"unbalanced<":                                        "unbalanced<",
	} {
		if got := NormaliseKernel(in); got != want {
			t.Errorf("NormaliseKernel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrecisionOf(t *testing.T) {
	for in, want := range map[string]string{
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64": "bf16",
		"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn": "fp16",
		"volta_sgemm_128x32_nt": "fp32",
		"Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64": "bf16",
		"Cijk_Ailk_Bljk_SB_MT64x64x16":                               "fp32",
		// Attention kernels carry CUTLASS types in their template
		// arguments but are no matmul of their own.
		"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)": "",
		"void at::native::vectorized_elementwise_kernel<4, float>":                                                                             "",
	} {
		if got := precisionOf(in); got != want {
			t.Errorf("precisionOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]Rule{
		"step_time > +5%":     {Metric: "step_time", Op: ">", Value: 5, Relative: true},
		"peak_memory>=20GiB":  {Metric: "peak_memory", Op: ">=", Value: 20 << 30},
		"syncs > 2":           {Metric: "syncs", Op: ">", Value: 2},
		"kernel_time < -10%":  {Metric: "kernel_time", Op: "<", Value: -10, Relative: true},
		"comm_time > 1.5ms":   {Metric: "comm_time", Op: ">", Value: 1500},
		" Verdict  Changed  ": {Verdict: true},
	} {
		got, err := ParseRule(in)
		want.Text = in
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"step_time >> 5", "speed > 5%", "step_time > 5 parsecs", "verdict", ""} {
		if _, err := ParseRule(bad); err == nil || !strings.Contains(err.Error(), "--fail-if") {
			t.Errorf("ParseRule(%q): error %v, want one naming the flag", bad, err)
		}
	}
}

func TestRuleCheck(t *testing.T) {
	yes, no := true, false
	res := &Result{Metrics: map[string]Metric{
		"step_time":   {Base: 100, New: 108, DeltaPct: 8, Significant: &no},
		"peak_memory": {Base: 1 << 30, New: 1.5 * (1 << 30), DeltaPct: 50},
	}}
	check := func(s string) bool {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		failed, _ := r.Check(res)
		return failed
	}
	if check("step_time > +5%") {
		t.Error("a change within the noise must not fail the gate")
	}
	res.Metrics["step_time"] = Metric{Base: 100, New: 108, DeltaPct: 8, Significant: &yes}
	if !check("step_time > +5%") || check("step_time > +10%") {
		t.Error("step_time +8%: want > +5% to fail and > +10% to pass")
	}
	if !check("peak_memory > +10%") || !check("peak_memory > 1GiB") || check("peak_memory > 2GiB") {
		t.Error("peak_memory 1 -> 1.5 GiB")
	}
	if check("syncs > 0") {
		t.Error("an unmeasured metric must not fail")
	}
	if check("verdict changed") {
		t.Error("verdict unchanged")
	}
	res.Headline.VerdictChanged = true
	if !check("verdict changed") {
		t.Error("verdict changed")
	}
}

func TestMedianRatioInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	noisy := func(n int, mean float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = mean * (1 + 0.1*rng.NormFloat64())
		}
		return out
	}
	a, b := noisy(60, 1000), noisy(60, 1000)
	if lo, hi := medianRatioInterval(a, b); lo > 0 || hi < 0 || hi-lo > 20 {
		t.Errorf("same distribution: interval %.1f%%..%.1f%%, want it to contain 0 and be narrow", lo, hi)
	}
	if lo, hi := medianRatioInterval(a, noisy(60, 1200)); lo < 10 || hi > 30 {
		t.Errorf("+20%%: interval %.1f%%..%.1f%%", lo, hi)
	}
	lo1, hi1 := medianRatioInterval(a, b)
	if lo2, hi2 := medianRatioInterval(a, b); lo1 != lo2 || hi1 != hi2 {
		t.Error("the interval must not change between calls on the same input")
	}
}

func TestTopKeepsNewAndCountChanges(t *testing.T) {
	items := []ItemDelta{
		{Name: "small", Match: Exact, BaseUs: 10, NewUs: 11, BaseCalls: 5, NewCalls: 5},
		{Name: "tiny-new", Match: Added, NewUs: 1, NewCalls: 1},
		{Name: "more-launches", Match: Exact, BaseUs: 10, NewUs: 10.5, BaseCalls: 5, NewCalls: 20},
		{Name: "big", Match: Exact, BaseUs: 100, NewUs: 300, BaseCalls: 5, NewCalls: 5},
	}
	for i := range items {
		items[i].DeltaUs = items[i].NewUs - items[i].BaseUs
	}
	got := top(items, 10, 50)
	var names []string
	for _, it := range got {
		names = append(names, it.Name)
	}
	if strings.Join(names, ",") != "big,tiny-new,more-launches" {
		t.Errorf("top = %v", names)
	}
}

func TestReadBudget(t *testing.T) {
	write := func(content string) string {
		p := filepath.Join(t.TempDir(), "budget.toml")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b, err := ReadBudget(write(`fail_if = ["step_time > 50ms", "peak_memory > 20GiB"]` + "\nforbid_verdicts = [\"input-bound\"]\n"))
	if err != nil || len(b.rules) != 2 || b.rules[1].Value != 20<<30 || b.ForbidVerdicts[0] != "input-bound" {
		t.Fatalf("budget %+v, %v", b, err)
	}
	for content, want := range map[string]string{
		`fail_if = ["step_time > +5%"]`: "compares with a base run",
		`fail_if = ["verdict changed"]`: "compares with a base run",
		`fail_if = ["speed > 5"]`:       "unknown metric",
		`failif = ["step_time > 5ms"]`:  "unknown key",
		`fail_if = "step_time > 5ms"`:   "budget.toml",
		"# nothing\n":                   "no budget",
		`fail_if = ["step_time > 5ms"`:  "budget.toml",
	} {
		if _, err := ReadBudget(write(content)); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "budget.toml") {
			t.Errorf("%q: error %v, want one naming the file and %q", content, err, want)
		}
	}
}

func TestEnvDiffs(t *testing.T) {
	env := func(js string) *runreport.Report {
		var e rundir.Env
		if err := json.Unmarshal([]byte(js), &e); err != nil {
			t.Fatal(err)
		}
		return &runreport.Report{Processes: []runreport.ProcessReport{{Tag: "rank0", Env: &e}}, Host: map[string]any{"num_cpu": 2}}
	}
	a := env(`{"python": {"version": "3.11.7", "executable": "/a/python"}, "torch": {"version": "2.5.0", "num_threads": 4, "flags": {"matmul_allow_tf32": false}}, "env": {"OMP_NUM_THREADS": "4"}}`)
	b := env(`{"python": {"version": "3.11.7", "executable": "/b/python"}, "torch": {"version": "2.6.0", "num_threads": 4, "flags": {"matmul_allow_tf32": true}}, "env": {}}`)
	got := map[string]EnvDiff{}
	for _, d := range envDiffs(a, b) {
		got[d.Key] = d
	}
	want := map[string]EnvDiff{
		"torch.version":                 {Key: "torch.version", Base: "2.5.0", New: "2.6.0"},
		"torch.flags.matmul_allow_tf32": {Key: "torch.flags.matmul_allow_tf32", Base: "false", New: "true"},
		"env.OMP_NUM_THREADS":           {Key: "env.OMP_NUM_THREADS", Base: "4", New: "(not set)"},
	}
	if len(got) != len(want) {
		t.Errorf("differences %+v, want %+v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	if d := envDiffs(a, a); len(d) != 0 {
		t.Errorf("an environment differs from itself: %+v", d)
	}
	if d := envDiffs(a, nil); d != nil {
		t.Errorf("traces have no environment: %+v", d)
	}
}

func TestCause(t *testing.T) {
	r := &Result{Headline: Headline{DeltaPct: 40, Significant: true, NoiseKnown: true}}
	r.Kernels = []ItemDelta{
		{Name: "ampere_sgemm_128x64_nn", Match: Exact, DeltaUs: 900, SharePct: 60, Op: "aten::mm"},
		{Name: "elementwise", Match: Exact, DeltaUs: -1000, Op: "aten::add"},
	}
	r.Ops = []ItemDelta{{Name: "aten::mm", DeltaUs: 900, BaseShapes: []string{"[[64, 64]]"}, NewShapes: []string{"[[128, 64]]"}}}
	got := cause(r)
	for _, want := range []string{"mainly kernel ampere_sgemm_128x64_nn", "+900 µs per step", "+60%", "launched by aten::mm", "input shapes [[64, 64]] -> [[128, 64]]"} {
		if !strings.Contains(got, want) {
			t.Errorf("cause %q lacks %q", got, want)
		}
	}
	// Only an operator moved in the change's direction: it is named as one.
	r.Kernels = r.Kernels[1:]
	r.Ops = []ItemDelta{{Name: "aten::item", Match: Added, DeltaUs: 500, Time: "device", NewShapes: []string{"[[]]"}}}
	if got := cause(r); !strings.HasPrefix(got, "mainly operator aten::item") || !strings.Contains(got, "new") || !strings.Contains(got, "none -> [[]]") {
		t.Errorf("cause %q", got)
	}
	// The step annotation's self time is what no operator holds, not an
	// operator (CI: a torch.save checkpoint's time, unsampled, was
	// "mainly operator ProfilerStep#N").
	r.Ops = []ItemDelta{{Name: "ProfilerStep#N", Match: Exact, DeltaUs: 2120, SharePct: 91}, {Name: "aten::mm", Match: Exact, DeltaUs: 100}}
	if got := cause(r); !strings.HasPrefix(got, "mainly time in the step outside every operator (Python, I/O, waits") || !strings.Contains(got, "+2.12 ms per step") {
		t.Errorf("cause %q", got)
	}
	// Within the noise: no cause.
	r.Headline.Significant = false
	if got := cause(r); got != "" {
		t.Errorf("cause %q for a change within the noise", got)
	}
}
