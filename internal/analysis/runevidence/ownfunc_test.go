package runevidence

import (
	"fmt"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// The program's own tensor code is named by the function it runs in when
// its samples spread over that function's lines and the helpers it
// calls (a BiLSTM-CRF's forward algorithm: its loop lines and
// log_sum_exp's, 3-5% each); not when the module level holds them, when
// one line of the function holds them all, nor when no function holds
// half.
func TestOwnFunc(t *testing.T) {
	const f = "crf.py"
	fr := func(fn string, first, line int) pyprofile.Frame {
		return pyprofile.Frame{File: f, Func: fn, FLine: first, Line: line}
	}
	module := func(line int) pyprofile.Frame { return fr("<module>", 1, line) }
	nll := fr("BiLSTM_CRF.neg_log_likelihood", 150, 158)
	alg := func(line int) pyprofile.Frame { return fr("BiLSTM_CRF._forward_alg", 68, line) }
	lse := func(line int) pyprofile.Frame { return fr("log_sum_exp", 29, line) }
	score := fr("BiLSTM_CRF._score_sentence", 106, 112)
	for _, c := range []struct {
		name   string
		stacks []programStack
		want   string // func, first line, share; the caller's line
	}{
		{"the forward algorithm and its helpers", []programStack{
			{[]pyprofile.Frame{module(216), nll, alg(84)}, 4},
			{[]pyprofile.Frame{module(216), nll, alg(87)}, 2},
			{[]pyprofile.Frame{module(216), nll, alg(93), lse(31)}, 6},
			{[]pyprofile.Frame{module(216), nll, alg(93), lse(33)}, 3},
			{[]pyprofile.Frame{module(216), nll, fr("BiLSTM_CRF.neg_log_likelihood", 150, 159), score}, 3},
			{[]pyprofile.Frame{module(216)}, 10},
		}, "BiLSTM_CRF._forward_alg:68 15%, called at 158"},
		{"a helper holding most of them", []programStack{
			{[]pyprofile.Frame{module(216), nll, alg(93), lse(31)}, 8},
			{[]pyprofile.Frame{module(216), nll, alg(93), lse(33)}, 8},
			{[]pyprofile.Frame{module(216), nll, alg(84)}, 4},
			{[]pyprofile.Frame{module(216)}, 5},
		}, "log_sum_exp:29 16%, called at 93"},
		{"a loop at the module level", []programStack{
			{[]pyprofile.Frame{module(40)}, 10},
			{[]pyprofile.Frame{module(41)}, 10},
		}, ""},
		{"one line of the function", []programStack{
			{[]pyprofile.Frame{module(216), nll, alg(84)}, 20},
			{[]pyprofile.Frame{module(30)}, 2},
		}, ""},
		{"spread over functions", []programStack{
			{[]pyprofile.Frame{module(10), alg(84)}, 5},
			{[]pyprofile.Frame{module(11), lse(31)}, 5},
			{[]pyprofile.Frame{module(12), score}, 5},
		}, ""},
	} {
		got, caller := ownFunc(c.stacks, 100)
		desc := ""
		if got != nil {
			desc = fmt.Sprintf("%s:%d %.0f%%", got.Func, got.Line, got.Pct)
			if caller != nil {
				desc += fmt.Sprintf(", called at %d", caller.Line)
			}
		}
		if desc != c.want {
			t.Errorf("%s: %q, want %q", c.name, desc, c.want)
		}
	}
}
