package diagnose

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// The thread findings name what set torch's thread count: the program's
// torch.set_num_threads call, else OMP_NUM_THREADS / MKL_NUM_THREADS from
// the environment (OMP first), else nothing.
func TestThreadSource(t *testing.T) {
	one, four := 1, 4
	call := &rundir.ThreadCall{Call: "set_num_threads", Value: &four, File: "train.py", Line: 7, Func: "main"}
	interop := &rundir.ThreadCall{Call: "set_num_interop_threads", Value: &one, File: "train.py", Line: 8, Func: "main"}
	for _, c := range []struct {
		name          string
		cpus, threads int
		env           map[string]string
		set, inter    *rundir.ThreadCall
		rule          string
		where, change string // "" : no such location / text
	}{
		{"oversubscribed by OMP", 2, 4, map[string]string{"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "8"}, nil, nil, "cpu.oversubscribed", "env OMP_NUM_THREADS", "threads come from OMP_NUM_THREADS=4 in the environment"},
		{"oversubscribed by MKL", 2, 4, map[string]string{"MKL_NUM_THREADS": "4"}, nil, nil, "cpu.oversubscribed", "env MKL_NUM_THREADS", "threads come from MKL_NUM_THREADS=4"},
		{"the call overrides the environment", 2, 4, map[string]string{"OMP_NUM_THREADS": "2"}, call, interop, "cpu.oversubscribed", "python main train.py:7", "threads come from torch.set_num_threads at train.py:7"},
		{"interop call shown", 2, 4, nil, call, interop, "cpu.oversubscribed", "python main train.py:8", "come from torch.set_num_threads"},
		{"default count", 2, 4, nil, nil, nil, "cpu.oversubscribed", "", ""},
		{"cores left free by OMP", 8, 2, map[string]string{"OMP_NUM_THREADS": "2"}, nil, nil, "cpu.native", "env OMP_NUM_THREADS", "OMP_NUM_THREADS=2 in the environment holds torch to its count: set OMP_NUM_THREADS=8"},
		{"torch capped the variable's count", 2, 2, map[string]string{"OMP_NUM_THREADS": "4"}, nil, nil, "cpu.native", "", ""},
		{"MKL shadowed by OMP", 2, 4, map[string]string{"OMP_NUM_THREADS": "x", "MKL_NUM_THREADS": "4"}, nil, nil, "cpu.oversubscribed", "", ""},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.8}, d: &Diagnosis{}, in: Analyses{
			Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 500}}},
			Run: &runevidence.RunEvidence{ThreadEnv: c.env, SetThreads: c.set, SetInteropThreads: c.inter,
				Env: &runevidence.Env{CPUs: c.cpus, NumThreads: c.threads, LocalRanks: 1, LoadAverage: -1}}}}
		s.findings()
		var f *Finding
		for i := range s.d.Findings {
			if s.d.Findings[i].Rule == c.rule {
				f = &s.d.Findings[i]
			}
		}
		if f == nil {
			t.Errorf("%s: no %s: %+v", c.name, c.rule, s.d.Findings)
			continue
		}
		var where []string
		for _, l := range f.Where {
			if l.Kind == "env" || l.Kind == "python" {
				w := l.Kind + " " + l.Name
				if l.File != "" {
					w += " " + l.File + ":" + strconv.Itoa(l.Line)
				}
				where = append(where, w)
			}
		}
		if c.where == "" && len(where) > 0 || c.where != "" && !strings.Contains(strings.Join(where, "|"), c.where) {
			t.Errorf("%s: where %v, want %q", c.name, where, c.where)
		}
		if c.change != "" && !strings.Contains(f.AllChanges(), c.change) {
			t.Errorf("%s: change %q, want %q", c.name, f.AllChanges(), c.change)
		}
		if c.change == "" && strings.Contains(f.AllChanges(), "come from") {
			t.Errorf("%s: names a source: %q", c.name, f.AllChanges())
		}
	}
}
