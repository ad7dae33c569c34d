package diagnose

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

var _ = addRule(Rule{
	ID: "input.padding", Class: GPUCompute, Factor: 0.8,
	When:   "run evidence: a model's first calls had an attention_mask (a token 1, padding 0), and padding each batch to its own longest sequence would compute <= 1-MinPaddingCut of the positions they computed; at stake: the step's computation (the kernels' share on a device, else the native ops') times the positions it would leave out",
	Change: paddingChange + ", not to a fixed length: tokenize without padding (tokenizer(..., padding=False), or padding=\"longest\" where a batch is tokenized) and let the collator pad (DataCollatorWithPadding); and batch sequences of similar length together",
	detect: (*state).paddingFinding,
	Fires:  "TestPaddingFinding", Silent: "TestPaddingFinding",
})

// paddingChange is how the change asks for dynamic padding (the knob of
// the program's own option, options.go).
const paddingChange = "pad each batch to its own longest sequence"

// paddedModel is the model whose calls' masks had the most padding to
// spare (nil: no call had a mask, or none had MinPaddingCut to spare).
func (s *state) paddedModel() (*rundir.ModelCall, float64) {
	r := s.in.Run
	if r == nil {
		return nil, 0
	}
	var best *rundir.ModelCall
	cut := 0.0
	for i, m := range r.Models {
		p := m.Padding
		if p == nil || p.Tokens <= 0 || p.Longest > p.Tokens {
			continue
		}
		if c := 1 - float64(p.Longest)/float64(p.Tokens); c > cut {
			best, cut = &r.Models[i], c
		}
	}
	if cut < s.p.MinPaddingCut {
		return nil, 0
	}
	return best, cut
}

// paddingKeep is the part of the step's computation that padding each
// batch to its own longest keeps: the positions it leaves out, at the
// rule's Factor (a layer's time is about linear in the positions,
// attention's grows faster, and small batches run less efficiently).
func (s *state) paddingKeep() (float64, bool) {
	_, cut := s.paddedModel()
	if cut == 0 {
		return 1, false
	}
	return 1 - rule("input.padding").Factor*cut, true
}

// paddingFinding: a model computes the padding of its batches. Text
// models fed batches padded to a fixed length (tokenizer(...,
// padding="max_length"), a common recipe) spend the padded positions'
// time in every layer; a batch padded to its own longest sequence
// computes what the mask keeps, and batches of similar lengths
// (group_by_length) leave less still.
func (s *state) paddingFinding() {
	m, cut := s.paddedModel()
	if m == nil {
		return
	}
	p := m.Padding
	class := GPUCompute
	if !s.deviceRecorded() {
		class = CPUCompute
	}
	atStake := min(s.share[class], 1) * cut * s.step
	if atStake < s.p.MinFinding*s.step {
		return
	}
	length := float64(p.Tokens) / float64(p.Calls)
	ms := []Evidence{
		{"padding in the model's batches (attention_mask zeros)", pct(1 - float64(p.Real)/float64(p.Tokens)), "%", "evidence"},
		{"positions padding each batch to its longest would leave out", pct(cut), "%", "evidence"},
		{"model calls whose attention_mask was read", float64(p.Calls), "", "evidence"},
	}
	title := fmt.Sprintf("%.0f%% of the positions %s computes are padding: its batches are padded past their longest sequence", pct(1-float64(p.Real)/float64(p.Tokens)), m.Class)
	change := fmt.Sprintf("the model (%s) computes every position of its batches (%.0f a call, batch x length), and padding each batch to its own longest sequence would leave out %.0f%% of them: %s",
		modelCallRef(*m), length, pct(cut), rule("input.padding").Change)
	if s.framework() == "transformers" {
		change += " (the Trainer's TrainingArguments(group_by_length=True); from transformers 5, train_sampling_strategy=\"group_by_length\")"
	}
	where := []Location{{Kind: "python", Name: m.Func, File: m.File, Line: m.Line, Note: "the model's call"}}
	f := s.finding("input.padding", title, atStake, ms, where, change)
	f.Class = class
	s.emit(f)
}
