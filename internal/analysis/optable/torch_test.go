package optable

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// The operator table of a trace recorded by real PyTorch agrees with
// prof.key_averages() printed by the same run.
func TestMatchesKeyAverages(t *testing.T) {
	py := testutil.TorchPython(t)
	dir := t.TempDir()
	cmd := exec.Command(py, "testdata/record_cpu.py", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("recording failed: %v\n%s", err, out)
	}
	var ka struct {
		Torch string
		Rows  []struct {
			Name       string
			Count      int
			SelfCPUUs  float64 `json:"self_cpu_us"`
			CPUTotalUs float64 `json:"cpu_total_us"`
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "key_averages.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ka); err != nil {
		t.Fatal(err)
	}
	tr, err := kineto.ReadFile(filepath.Join(dir, "trace.json"), kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Problems.Any() {
		t.Errorf("problems reading a fresh trace: %v", tr.Problems.List)
	}
	table := Ops(tr, Options{})
	rows := map[string]OpRow{}
	for _, r := range table.Rows {
		rows[r.Name] = r
	}
	compared, backward := 0, 0
	for _, want := range ka.Rows {
		if classify.IsBackward(want.Name) {
			backward += want.Count
		}
		got, ok := rows[want.Name]
		if !ok {
			t.Errorf("torch %s: key_averages has %q, the operator table does not", ka.Torch, want.Name)
			continue
		}
		compared++
		// The trace stores µs with 3 decimals; key_averages sums the
		// same numbers, so each call may differ by rounding only.
		tol := 0.002*float64(want.Count) + 0.01
		if got.Calls != want.Count {
			t.Errorf("%s: calls %d, key_averages %d", want.Name, got.Calls, want.Count)
		}
		if math.Abs(got.HostTotalUs-want.CPUTotalUs) > tol {
			t.Errorf("%s: host total %.3f us, key_averages %.3f us", want.Name, got.HostTotalUs, want.CPUTotalUs)
		}
		if math.Abs(got.HostSelfUs-want.SelfCPUUs) > tol {
			t.Errorf("%s: host self %.3f us, key_averages %.3f us", want.Name, got.HostSelfUs, want.SelfCPUUs)
		}
	}
	if compared < 10 {
		t.Errorf("compared only %d operators", compared)
	}
	// the training loop's backward, counted as key_averages lists it
	if backward == 0 || table.BackwardCalls != backward {
		t.Errorf("backward calls %d, key_averages %d", table.BackwardCalls, backward)
	}
}

// Layers' forward run again inside the backward, as torch.utils.checkpoint
// does (reentrant or not), is counted once per recomputed layer; a model
// without checkpointing has none.
func TestRecomputeOfCheckpoint(t *testing.T) {
	py := testutil.TorchPython(t)
	dir := t.TempDir()
	if out, err := exec.Command(py, "testdata/record_checkpoint.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("recording failed: %v\n%s", err, out)
	}
	for _, mode := range []string{"reentrant", "nonreentrant", "plain"} {
		tr, err := kineto.ReadFile(filepath.Join(dir, mode+".json"), kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := Ops(tr, Options{}).Recompute
		if mode == "plain" {
			if r != nil {
				t.Errorf("plain: recompute %+v", r)
			}
			continue
		}
		calls := map[string]int{}
		if r != nil {
			for _, op := range r.Ops {
				calls[op.Name] = op.Calls
			}
		}
		// 2 checkpointed blocks x 3 steps; GELU is no layer entry op
		if r == nil || r.Calls != 12 || calls["aten::linear"] != 6 || calls["aten::layer_norm"] != 6 || r.HostUs <= 0 {
			t.Errorf("%s: recompute %+v", mode, r)
		}
	}
}
