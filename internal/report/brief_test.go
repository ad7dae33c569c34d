package report

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	long := "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align4>(Params)"
	in := " 1. Device kernels take 61% of the step and more words here\n    change: one two three\n    where: kernel " + long + " [8%]\n"
	got := Wrap(in, 30)
	want := " 1. Device kernels take 61% of\n" +
		"       the step and more words\n" +
		"       here\n" +
		"    change: one two three\n" +
		"    where: kernel void cutlas…\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// a word wider than the line loses its middle, not its end
	if got := Wrap(long, 30); !strings.Contains(got, "…") || !strings.HasSuffix(got, "(Params)") {
		t.Errorf("long word: %q", got)
	}
	for _, line := range strings.Split(Wrap(long, 30), "\n") {
		if n := len([]rune(line)); n > 30 {
			t.Errorf("%d columns: %q", n, line)
		}
	}
}
