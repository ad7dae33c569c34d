package breakdown

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// tbRef is reference/tb_plugin_out.txt: per step Kernel, Memcpy, Memset,
// Communication, Runtime, DataLoader, CPU Exec, Other (µs), then the
// average per category (rounded µs and %) and the average total.
type tbRef struct {
	file  string
	steps map[string][8]float64
	names []string
	avgUs [8]float64
	avgPc [8]float64
	total float64
}

var tbRefs = []tbRef{
	{file: "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
		names: []string{"101", "102", "103", "104", "105"},
		steps: map[string][8]float64{
			"101": {93700.25, 754.0, 116.75, 54.0, 1262.75, 0, 4398.75, 864.75},
			"102": {93740.5, 736.5, 118.0, 0, 606.0, 0, 536.0, 0},
			"103": {93607.0, 736.75, 118.75, 0, 606.0, 0, 502.0, 0},
			"104": {93708.75, 735.0, 117.5, 1.0, 575.5, 0, 526.5, 0},
			"105": {93416.75, 739.0, 117.0, 0, 1016.25, 0, 105.75, 0}},
		avgUs: [8]float64{93635, 740, 118, 11, 813, 0, 1214, 173},
		avgPc: [8]float64{96.83, 0.77, 0.12, 0.01, 0.84, 0.0, 1.26, 0.18}, total: 96704},
	{file: "hta/nccl_parser_config/nccl_data.json.gz",
		names: []string{"4", "5", "6"},
		steps: map[string][8]float64{
			"4": {48670.1572265625, 647.2060546875, 121.57421875, 356.0439453125, 10161.9892578125, 0, 162255.0673828125, 230.1533203125},
			"5": {48969.03515625, 637.005859375, 122.908203125, 311.427734375, 10108.7177734375, 0, 159369.556640625, 208.25390625},
			"6": {57576.1162109375, 639.978515625, 116.0966796875, 372.8037109375, 9876.7763671875, 0, 156132.5498046875, 221.921875}},
		avgUs: [8]float64{51738, 641, 120, 347, 10049, 0, 159252, 220},
		avgPc: [8]float64{23.27, 0.29, 0.05, 0.16, 4.52, 0.0, 71.62, 0.1}, total: 222368},
	{file: "hta/negative_queue_length_values_check/rank0.json.gz",
		names: []string{"550", "551", "552", "553", "554"},
		steps: map[string][8]float64{
			"550": {123355, 13655, 105, 118, 194073, 0, 34608, 2497},
			"551": {71473, 8106, 65, 52, 107174, 0, 26271, 2429},
			"552": {66788, 7668, 73, 122, 110607, 0, 28795, 2464},
			"553": {73131, 8133, 66, 53, 107613, 0, 24803, 2412},
			"554": {61568, 4159, 73, 114, 124315, 0, 20755, 1534}},
		avgUs: [8]float64{79263, 8344, 76, 92, 128756, 0, 27046, 2267},
		avgPc: [8]float64{32.24, 3.39, 0.03, 0.04, 52.37, 0.0, 11.0, 0.92}, total: 245845},
	{file: "hta/trace_filter/sampled_rank-0.json.gz",
		names: []string{"551", "552"},
		steps: map[string][8]float64{
			"551": {278511.0, 152.0, 17.0, 218.0, 3093.0, 0, 318335.0, 6986.0},
			"552": {268792.0, 175.0, 9.0, 76.0, 3052.0, 0, 342211.0, 8613.0}},
		avgUs: [8]float64{273652, 164, 13, 147, 3072, 0, 330273, 7800},
		avgPc: [8]float64{44.49, 0.03, 0.0, 0.02, 0.5, 0.0, 53.69, 1.27}, total: 615120},
	{file: "hta/trace_filter/sampled_rank-1.json.gz",
		names: []string{"551", "552"},
		steps: map[string][8]float64{
			"551": {269884.0, 2108.0, 11.0, 112.0, 2100.0, 0, 325067.0, 8622.0},
			"552": {305612.0, 2418.0, 17.0, 13.0, 2242.0, 0, 313383.0, 6954.0}},
		avgUs: [8]float64{287748, 2263, 14, 62, 2171, 0, 319225, 7788},
		avgPc: [8]float64{46.47, 0.37, 0.0, 0.01, 0.35, 0.0, 51.55, 1.26}, total: 619272},
	{file: "hta/df_index_resolver/df_index_resolver.json.gz",
		names: []string{"2", "3", "4", "5", "6"},
		steps: map[string][8]float64{
			"2": {183865, 4401, 176, 10342, 19690, 0, 115751, 11545},
			"3": {183614, 4424, 176, 11547, 21615, 0, 132224, 11656},
			"4": {183517, 4410, 176, 10360, 19046, 0, 117143, 11445},
			"5": {183763, 4354, 181, 10369, 19153, 0, 115300, 11149},
			"6": {243100, 4273, 183, 513, 14066, 0, 63846, 10347}},
		avgUs: [8]float64{195572, 4372, 178, 8626, 18714, 0, 108853, 11228},
		avgPc: [8]float64{56.27, 1.26, 0.05, 2.48, 5.38, 0.0, 31.32, 3.23}, total: 347544},
	{file: "hta/trace_diff/control/control.json.gz",
		names: []string{"1009", "1010", "1011", "1012", "1013", "1014"},
		steps: map[string][8]float64{
			"1009": {55068, 2889, 118, 32, 3150, 71, 14185, 143},
			"1010": {59335, 2866, 99, 59, 3403, 67, 10896, 75},
			"1011": {62589, 2955, 87, 0, 1871, 73, 8562, 97},
			"1012": {61816, 4125, 89, 0, 1884, 70, 8631, 112},
			"1013": {66149, 3014, 86, 0, 2017, 68, 7040, 99},
			"1014": {64300, 2913, 89, 33, 2473, 71, 11144, 97}},
		avgUs: [8]float64{61543, 3127, 95, 21, 2466, 70, 10076, 104},
		avgPc: [8]float64{79.41, 4.03, 0.12, 0.03, 3.18, 0.09, 13.0, 0.13}, total: 77502},
	{file: "hta/trace_diff/test/test.json.gz",
		names: []string{"1009", "1010", "1011", "1012", "1013", "1014"},
		steps: map[string][8]float64{
			"1009": {134763, 16720, 132, 7, 2335, 0, 2621, 68},
			"1010": {97534, 14897, 113, 32, 2059, 8, 2476, 9},
			"1011": {96577, 13714, 129, 1, 2898, 0, 1474, 9},
			"1012": {98036, 21657, 140, 28, 1100, 120, 1981, 42},
			"1013": {97497, 14546, 116, 26, 1861, 4, 2635, 7},
			"1014": {96840, 13903, 123, 35, 3648, 0, 1584, 10}},
		avgUs: [8]float64{103541, 15906, 126, 22, 2317, 22, 2128, 24},
		avgPc: [8]float64{83.44, 12.82, 0.1, 0.02, 1.87, 0.02, 1.72, 0.02}, total: 124086},
}

func tbCosts(c *Costs) [8]float64 {
	return [8]float64{c.KernelUs, c.MemcpyUs, c.MemsetUs, c.CommunicationUs, c.RuntimeUs, c.DataLoaderUs, c.CPUExecUs, c.OtherUs}
}

var tbCatNames = [8]string{"Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other"}

// TestTBConformance asserts every number of reference/tb_plugin_out.txt:
// per-step costs to within 0.002 µs (the plugin sums float µs; we sum
// integer ns), averages rounded to the µs (half to even, like Python's
// round) and percentages to 0.01.
func TestTBConformance(t *testing.T) {
	for _, ref := range tbRefs {
		t.Run(ref.file, func(t *testing.T) {
			tr := tracetest.Load(t, ref.file)
			r, err := Compute(tr, Options{Definition: TB})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range r.Steps {
				names = append(names, s.Name)
			}
			if len(names) != len(ref.names) {
				t.Fatalf("steps %v, want %v", names, ref.names)
			}
			for i, s := range r.Steps {
				if s.Name != ref.names[i] {
					t.Errorf("step %d is %s, want %s", i, s.Name, ref.names[i])
				}
				got := tbCosts(&s.Costs)
				want := ref.steps[s.Name]
				for c := range got {
					if math.Abs(got[c]-want[c]) > 0.002 {
						t.Errorf("step %s %s = %.4f, want %.4f", s.Name, tbCatNames[c], got[c], want[c])
					}
				}
			}
			avg := tbCosts(&r.Average)
			for c := range avg {
				if math.RoundToEven(avg[c]) != ref.avgUs[c] {
					t.Errorf("average %s = %.3f, want %v", tbCatNames[c], avg[c], ref.avgUs[c])
				}
				pct := math.Round(100*avg[c]/r.Average.TotalUs*100) / 100
				if pct != ref.avgPc[c] {
					t.Errorf("average %s = %.4f%%, want %v%%", tbCatNames[c], 100*avg[c]/r.Average.TotalUs, ref.avgPc[c])
				}
			}
			if math.RoundToEven(r.Average.TotalUs) != ref.total {
				t.Errorf("average total = %.3f, want %v", r.Average.TotalUs, ref.total)
			}
		})
	}
}
