package breakdown

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

func TestSumsToStep(t *testing.T) {
	for _, f := range []string{"ns_resolution", "negative_queue", "nccl_data", "h100_qwen", "cpu_only", "amd"} {
		tr := tracetest.Load(t, tracetest.Golden[f])
		for _, def := range []Def{Default, TB} {
			r, err := Compute(tr, Options{Definition: def})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range r.Steps {
				sum := s.KernelUs + s.MemcpyUs + s.MemsetUs + s.CommunicationUs + s.RuntimeUs + s.DataLoaderUs + s.CPUExecUs + s.OtherUs
				if d := sum - s.TotalUs; d > 0.01 || d < -0.01 {
					t.Errorf("%s %s step %s: categories sum to %.3f, step is %.3f", f, def, s.Name, sum, s.TotalUs)
				}
			}
		}
	}
}

// Two devices with overlapping streams, a kernel launched in step 1 that
// runs past the host end of step 1 (crossing into step 2's host span), a
// truncated last step, ns decimals, an NCCL SendRecv kernel.
const twoDevices = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":100,"dur":100},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":200,"dur":50},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":20.5,"args":{"External id":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":11,"dur":5.25,"args":{"External id":1,"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"External id":1,"correlation":2}},
{"ph":"X","cat":"kernel","name":"gemm_a","pid":0,"tid":7,"ts":20,"dur":100.125,"args":{"correlation":1,"device":0}},
{"ph":"X","cat":"kernel","name":"gemm_b","pid":1,"tid":8,"ts":30,"dur":40,"args":{"correlation":2,"device":1}},
{"ph":"X","cat":"cpu_op","name":"nccl:all_to_all","pid":1,"tid":1,"ts":110,"dur":10,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":112,"dur":4,"args":{"External id":2,"correlation":3}},
{"ph":"X","cat":"kernel","name":"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)","pid":0,"tid":20,"ts":125,"dur":30,"args":{"correlation":3,"device":0}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":130,"dur":4,"args":{"correlation":4}},
{"ph":"X","cat":"kernel","name":"relu","pid":0,"tid":7,"ts":160,"dur":10,"args":{"correlation":4,"device":0}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":131,"dur":4,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"relu","pid":0,"tid":7,"ts":171,"dur":10,"args":{"correlation":5,"device":0}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":180,"dur":10,"args":{"correlation":6}}
]}`

func TestFixtureTwoDevices(t *testing.T) {
	tr := tracetest.ReadString(t, twoDevices)
	r, err := Compute(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 3 {
		t.Fatalf("steps %+v", r.Steps)
	}
	s1 := r.Steps[0]
	// Step 1 ends when gemm_a ends (120.125), in device time.
	if s1.EndUs != 120.125 || s1.TotalUs != 120.125 {
		t.Errorf("step 1 window %v-%v", s1.StartUs, s1.EndUs)
	}
	// Kernels on both devices unioned: [20, 120.125).
	if s1.KernelUs != 100.125 {
		t.Errorf("step 1 kernel %v, want 100.125", s1.KernelUs)
	}
	s2 := r.Steps[1]
	if s2.StartUs != 120.125 {
		t.Errorf("step 2 starts %v, want 120.125 (after step 1's device end)", s2.StartUs)
	}
	// SendRecv [125,155) is communication, even where relu is not running.
	if s2.CommunicationUs != 30 {
		t.Errorf("step 2 communication %v, want 30", s2.CommunicationUs)
	}
	// The sync [180,190) loses [180,181) to the relu kernel (priority).
	if s2.RuntimeSyncUs != 9 {
		t.Errorf("step 2 sync wait %v, want 9", s2.RuntimeSyncUs)
	}
	// Step 3 launches nothing after steps with device work: incomplete.
	if !r.Steps[2].Incomplete || r.AveragedSteps != 2 {
		t.Errorf("step 3 incomplete=%v averaged %d", r.Steps[2].Incomplete, r.AveragedSteps)
	}
	// TB mode: SendRecv is a Kernel there.
	tb, _ := Compute(tr, Options{Definition: TB})
	if tb.Steps[1].CommunicationUs != 0 {
		t.Errorf("tb communication %v, want 0 (all_to_all not on the TB list)", tb.Steps[1].CommunicationUs)
	}
}

func TestFixtureNoStepsNoGPU(t *testing.T) {
	tr := tracetest.ReadString(t, `{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":5},
{"ph":"X","cat":"cpu_op","name":"aten::mul","pid":1,"tid":1,"ts":10,"dur":5}]}`)
	r, err := Compute(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.SyntheticStep || len(r.Steps) != 1 || r.Average.TotalUs != 15 || r.Average.CPUExecUs != 10 || r.Average.OtherUs != 5 {
		t.Errorf("%+v", r)
	}
	if _, err := Compute(tr, Options{Definition: "nope"}); err == nil {
		t.Error("unknown definition accepted")
	}
}
