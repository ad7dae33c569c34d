package memory_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

func TestGolden(t *testing.T) {
	for name, rel := range map[string]string{
		"df_index_resolver": "hta/df_index_resolver/df_index_resolver.json.gz",
		"dtu_mlops_cpu":     "misc/dtu_mlops_cpu_profile_memory.json.gz",
		"h100_qwen":         "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
	} {
		t.Run(name, func(t *testing.T) {
			tr := tracetest.Load(t, rel)
			r := memory.Compute(tr)
			testutil.CompareResult(t, name, r, report.WriteMemory)
			// The timeline is bounded and keeps each device's peak.
			for _, d := range r.Devices {
				if len(d.Timeline) > memory.MaxPoints {
					t.Errorf("%s: %d timeline points", d.Device, len(d.Timeline))
				}
				var peak int64
				for _, p := range d.Timeline {
					peak = max(peak, p.AllocatedBytes)
				}
				if peak != d.PeakAllocatedBytes {
					t.Errorf("%s: timeline peak %d, peak %d", d.Device, peak, d.PeakAllocatedBytes)
				}
			}
		})
	}
}

// Two steps on a 1 GiB GPU: step 2's op allocates 512 MiB on top of 64 MiB.
const memFixture = `{"deviceProperties":[{"id":0,"name":"Fake GPU","totalGlobalMem":1073741824}],"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":100,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":10,"dur":10},
{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":15,"args":{"Device Type":1,"Device Id":0,"Addr":1,"Bytes":67108864,"Total Allocated":67108864,"Total Reserved":134217728}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":110,"dur":50},
{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":120,"args":{"Device Type":1,"Device Id":0,"Addr":2,"Bytes":536870912,"Total Allocated":603979776,"Total Reserved":671088640}},
{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":150,"args":{"Device Type":1,"Device Id":0,"Addr":2,"Bytes":-536870912,"Total Allocated":67108864,"Total Reserved":671088640}},
{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":170,"args":{"Device Type":0,"Device Id":-1,"Addr":3,"Bytes":1000,"Total Allocated":1000,"Total Reserved":0}}
]}`

func TestFixture(t *testing.T) {
	r := memory.Compute(tracetest.ReadString(t, memFixture))
	if len(r.Devices) != 2 || r.Devices[0].Device != "CPU" || r.Devices[1].Device != "cuda:0" {
		t.Fatalf("devices: %+v", r.Devices)
	}
	g := r.Devices[1]
	if g.PeakAllocatedBytes != 603979776 || g.PeakAllocatedStep != 2 || g.PeakAllocatedUs != 120 {
		t.Errorf("peak allocated: %+v", g)
	}
	if g.PeakReservedBytes != 671088640 || g.PeakReservedPct != 62.5 || g.FinalAllocated != 67108864 {
		t.Errorf("peak reserved: %+v", g)
	}
	if g.Allocs != 2 || g.Frees != 1 || len(g.Timeline) != 3 {
		t.Errorf("counts: %+v", g)
	}
	if len(r.TopOps) != 3 || r.TopOps[0].Name != "aten::mm" || r.TopOps[0].AllocBytes != 536870912 || r.TopOps[2].Name != "(no op)" {
		t.Errorf("top ops: %+v", r.TopOps)
	}
	if r.Devices[0].TotalBytes != 0 || r.Devices[0].PeakAllocatedPct != 0 {
		t.Errorf("CPU has no known total: %+v", r.Devices[0])
	}
}

func TestNoMemoryEvents(t *testing.T) {
	r := memory.Compute(tracetest.ReadString(t, `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10}]}`))
	if r.Events != 0 || len(r.Devices) != 0 || len(r.TopOps) != 0 {
		t.Errorf("%+v", r)
	}
	var b bytes.Buffer
	report.WriteMemory(&b, r)
	if !strings.Contains(b.String(), "no [memory] events") {
		t.Error(b.String())
	}
}
