package optable

import (
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// stackKeys groups ops by their innermost Python frames: from the "Call
// stack" arg (older traces) or from the enclosing python_function events
// (with_stack in torch 2.x). Frames of torch's module machinery are skipped
// as noise, as key_averages(group_by_stack_n=N) does.
type stackKeys struct {
	t         *trace.Trace
	depth     int
	available bool
	ids       map[string]int
	texts     []string
}

func newStackKeys(t *trace.Trace, depth int) *stackKeys {
	s := &stackKeys{t: t, depth: depth, ids: map[string]int{"": 0}, texts: []string{""}}
	for i, k := range t.Events.Kind {
		if k == trace.KindPythonFunction {
			s.available = true
			break
		}
		if k == trace.KindCPUOp {
			if v, ok := t.ArgStr(i, trace.KeyCallStack); ok && v != "" {
				s.available = true
				break
			}
		}
	}
	return s
}

func (s *stackKeys) text(id int) string { return s.texts[id] }

func noiseFrame(f string) bool {
	return f == "" || strings.HasPrefix(f, "nn.Module:") || strings.Contains(f, "torch/nn/modules/module.py") ||
		strings.Contains(f, "torch/autograd/") || strings.Contains(f, "torch/_tensor.py") ||
		strings.Contains(f, "torch/utils/_contextlib.py")
}

// key returns the id of event e's stack (innermost frames first, joined
// by " <- ").
func (s *stackKeys) key(e int32) int {
	if !s.available {
		return 0
	}
	t := s.t
	var frames []string
	if v, ok := t.ArgStr(int(e), trace.KeyCallStack); ok && v != "" {
		for _, f := range strings.Split(v, ";") {
			if f = strings.TrimSpace(f); !noiseFrame(f) {
				frames = append(frames, f)
				if len(frames) == s.depth {
					break
				}
			}
		}
	} else {
		ev := &t.Events
		for p := ev.Parent[e]; p != trace.None && len(frames) < s.depth; p = ev.Parent[p] {
			if ev.Kind[p] == trace.KindPythonFunction {
				if f := t.Name(int(p)); !noiseFrame(f) {
					frames = append(frames, f)
				}
			}
		}
	}
	key := strings.Join(frames, " <- ")
	id, ok := s.ids[key]
	if !ok {
		id = len(s.texts)
		s.ids[key] = id
		s.texts = append(s.texts, key)
	}
	return id
}
