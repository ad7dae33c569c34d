package regions

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// Real two-rank DDP traces (gloo, CPU): accumulating 3 micro-batches per
// update syncs after every one of them unless the first two run under
// no_sync(); a model called twice with one backward syncs once.
func TestGradSyncRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Python ranks")
	}
	py := testutil.TorchPython(t)
	for _, c := range []struct {
		mode string
		want GradSync
	}{
		{"sync", GradSync{Steps: 3, Forwards: 9, Synced: 9, Updates: 3}},
		{"no_sync", GradSync{Steps: 3, Forwards: 9, Synced: 3, Updates: 3}},
		{"twice", GradSync{Steps: 3, Forwards: 6, Synced: 3, Updates: 3}},
	} {
		path := filepath.Join(t.TempDir(), c.mode+".json")
		if out, err := exec.Command(py, "testdata/record_ddp_accum.py", c.mode, path).CombinedOutput(); err != nil {
			t.Fatalf("%s: recording failed: %v\n%s", c.mode, err, out)
		}
		tr, err := kineto.ReadFile(path, kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := Compute(tr).GradSync; got == nil || *got != c.want {
			t.Errorf("%s: %+v, want %+v", c.mode, got, c.want)
		}
	}
}

// Without DDP's reducer ops an all-reduce between two forwards marks the
// first one synced; two models with an optimizer each (a GAN) sync once per
// update; a step without an optimizer step and a trace without DDP count
// nothing.
func TestGradSyncFixtures(t *testing.T) {
	const accumulate = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"DistributedDataParallel.forward","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"user_annotation","name":"nccl:all_reduce","pid":1,"tid":2,"ts":200,"dur":50},
{"ph":"X","cat":"user_annotation","name":"DistributedDataParallel.forward","pid":1,"tid":1,"ts":300,"dur":100},
{"ph":"X","cat":"user_annotation","name":"nccl:all_reduce","pid":1,"tid":2,"ts":500,"dur":50},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#AdamW.step","pid":1,"tid":1,"ts":800,"dur":100},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"DistributedDataParallel.forward","pid":1,"tid":1,"ts":1010,"dur":100},
{"ph":"X","cat":"user_annotation","name":"nccl:all_reduce","pid":1,"tid":2,"ts":1200,"dur":50}
]}`
	const gan = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"DistributedDataParallel.forward","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"cpu_op","name":"torch.distributed.ddp.reducer::copy_bucket_to_grad","pid":1,"tid":1,"ts":200,"dur":5},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#Adam.step","pid":1,"tid":1,"ts":300,"dur":100},
{"ph":"X","cat":"user_annotation","name":"DistributedDataParallel.forward","pid":1,"tid":1,"ts":500,"dur":100},
{"ph":"X","cat":"user_annotation","name":"gloo:all_reduce","pid":1,"tid":2,"ts":550,"dur":50},
{"ph":"X","cat":"cpu_op","name":"torch.distributed.ddp.reducer::copy_bucket_to_grad","pid":1,"tid":1,"ts":700,"dur":5},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#Adam.step","pid":1,"tid":1,"ts":800,"dur":100}
]}`
	const plain = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":800,"dur":100}
]}`
	for _, c := range []struct {
		name, fixture string
		want          *GradSync
	}{
		{"all-reduce between forwards", accumulate, &GradSync{Steps: 1, Forwards: 2, Synced: 2, Updates: 1}},
		{"two models, two optimizers", gan, &GradSync{Steps: 1, Forwards: 2, Synced: 2, Updates: 2}},
		{"no DDP", plain, nil},
	} {
		got := Compute(tracetest.ReadString(t, c.fixture)).GradSync
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
