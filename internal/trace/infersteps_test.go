package trace_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Traces real PyTorch programs wrote without ProfilerStep marks
// (internal/driver/testdata/corpus/README.md) are split into their iterations: each step
// holds exactly one of every per-iteration event, whatever marked it.
func TestInferStepsFromWhatRepeats(t *testing.T) {
	for _, c := range []struct {
		file, marks string
		steps       int
		once        []string // name prefixes each step must start exactly one of
	}{
		// 12 iterations: 12 optimizer steps bound 11 whole iterations,
		// each with its batch, forward, backward and update
		{"unmarked_train_loop.json.gz", "Optimizer.step#Adam.step", 11, []string{"enumerate(DataLoader)#", "Optimizer.step#", "Optimizer.zero_grad#", "autograd::engine::evaluate_function: NllLossBackward0"}},
		{"unmarked_decode_annotated.json.gz", "decode_step", 15, []string{"decode_step", "aten::argmax"}},
		{"unmarked_forward_with_stack.json.gz", "nn.Module: Net_0", 7, []string{"nn.Module: Net_0", "aten::conv2d"}},
		// one iteration: two DataLoader calls and one update are not a loop
		{"unmarked_one_iteration.json.gz", "", 1, nil},
	} {
		t.Run(c.file, func(t *testing.T) {
			tr, err := kineto.ReadFile(filepath.Join(testutil.RepoRoot(), "internal", "driver", "testdata", "corpus", c.file), kineto.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.StepMarks != c.marks || len(tr.Steps) != c.steps || tr.SyntheticStep != (c.marks == "") {
				t.Fatalf("marks %q, %d steps, synthetic %v; want %q, %d", tr.StepMarks, len(tr.Steps), tr.SyntheticStep, c.marks, c.steps)
			}
			if err := tr.Validate(); err != nil {
				t.Fatal(err)
			}
			ev := &tr.Events
			for _, prefix := range c.once {
				per := make([]int, len(tr.Steps))
				for i := range ev.Len() {
					if s := ev.Step[i]; s != trace.None && !ev.Kind[i].OnDevice() && strings.HasPrefix(tr.Name(i), prefix) {
						per[s]++
					}
				}
				for s, n := range per {
					if n != 1 {
						t.Errorf("step %d holds %d of %s, want one a step: %v", s, n, prefix, per)
						break
					}
				}
			}
			for i, s := range tr.Steps[1:] {
				if s.Start != tr.Steps[i].End {
					t.Errorf("step %d starts at %d, not where step %d ended (%d)", i+1, s.Start, i, tr.Steps[i].End)
				}
			}
		})
	}
}

// A server's per-request ranges on several threads are not a loop's
// iterations: the MTIA inference trace stays one whole-trace step.
func TestInferStepsNotFromConcurrentRequests(t *testing.T) {
	tr, err := kineto.ReadFile(filepath.Join(testutil.TracesDir(), "hta", "mtia_inference_trace", "mtia_inference_rank_0.json.gz"), kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.SyntheticStep || tr.StepMarks != "" {
		t.Errorf("steps inferred from %q (%d)", tr.StepMarks, len(tr.Steps))
	}
}
