package kernels

import (
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

func TestRequiredLiterals(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    []string // nil: no filter
	}{
		{`sgemm|cgemm`, []string{"sgemm", "cgemm"}},
		{`(?i)layer_?norm`, []string{"layer_norm", "layernorm"}}, // the whole: a few strings only
		{`(?i)layer_?\w*norm`, []string{"layer"}},                // the longer of the two required parts
		{`ncclKernel|ncclDevKernel`, []string{"ncclkernel", "nccldevkernel"}},
		{`^(void )?(nccl|rccl)[^:]`, []string{"nccl", "rccl"}}, // "void nccl" holds "nccl": dropped
		{`[Tt]ranspose|copy_(async_)?kernel`, []string{"transpose", "copy_async_kernel", "copy_kernel"}},
		{`x[a-z]+yz`, []string{"yz"}},                         // a wide class is no literal
		{`(^|_)mm_kernel`, []string{"mm_kernel"}},             // anchors require nothing
		{`(?i)RadixSort|topk`, []string{"radixsort", "topk"}}, // lowercased
		{`conv_\w*xdl`, []string{"conv_"}},
		{`(ab)+c?`, []string{"ab"}},
		{`gemm|\w+_kernel`, []string{"gemm", "_kernel"}},
		// Must stay silent: an alternative without a literal leaves the
		// whole pattern unfiltered.
		{`gemm|[a-z]+`, nil},
		{`a?`, nil},
		{`x*y{0,2}`, nil},
	} {
		re, err := syntax.Parse(c.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := requiredLiterals(re); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.pattern, got, c.want)
		}
	}
}

// The filter never hides a match: every name a rule's pattern matches
// (its examples, in any case) holds one of the rule's literals.
func TestFilterKeepsMatches(t *testing.T) {
	prepareRules()
	for _, r := range Rules {
		if r.match.needs == nil {
			continue
		}
		for _, ex := range Rules {
			for _, name := range ex.Examples {
				for _, n := range []string{name, strings.ToUpper(name), strings.ToLower(name)} {
					if r.match.re().MatchString(n) && !r.match.mayMatch(n) {
						t.Errorf("rule %s matches %.80q but the filter %q would skip it", r.ID, n, r.match.needs)
					}
				}
			}
		}
	}
}

// The same for the precision patterns: every example name one matches
// holds one of its literals.
func TestPrecisionFilterKeepsMatches(t *testing.T) {
	for i, p := range Precisions {
		pat := precisionPatterns()[i]
		if pat.needs == nil {
			continue
		}
		for _, ex := range Rules {
			for _, name := range ex.Examples {
				for _, n := range []string{name, strings.ToUpper(name), strings.ToLower(name)} {
					if pat.re().MatchString(n) && !pat.mayMatch(n) {
						t.Errorf("precision %s matches %.80q but the filter %q would skip it", p.Precision, n, pat.needs)
					}
				}
			}
		}
	}
}

// The same for the patterns of a kernel's template types and of the type
// names to ignore; names that match are added, as the examples hold few.
func TestOtherFiltersKeepMatches(t *testing.T) {
	for _, f := range []*filtered{templateTypes(), notAType()} {
		if f.needs == nil {
			t.Errorf("%s: no literal found, the filter passes every name", f.re())
		}
		names := []string{"void k<float>(float*)", "k<4, c10::BFloat16, at::Half>", "paged_attention<Fp8KVCacheDataType::kAuto, __nv_bfloat16>", "FP8KVCACHEDATATYPE"}
		for _, ex := range Rules {
			names = append(names, ex.Examples...)
		}
		matched := 0
		for _, name := range names {
			for _, n := range []string{name, strings.ToUpper(name), strings.ToLower(name)} {
				if f.re().MatchString(n) {
					matched++
					if !f.mayMatch(n) {
						t.Errorf("%s matches %.80q but the filter %q would skip it", f.re(), n, f.needs)
					}
				}
			}
		}
		if matched == 0 {
			t.Errorf("%s: no name matched, the test checks nothing", f.re())
		}
	}
}

// A pattern whose literals decide (filtered.decides) matches exactly the
// ASCII names that hold one of them, on every example name in three
// cases and on names built around each literal; patterns with classes,
// repeats or assertions, or matched with case, do not decide.
func TestDecidingFiltersAreTheMatch(t *testing.T) {
	prepareRules()
	pats := append([]*filtered{templateTypes(), notAType()}, precisionPatterns()...)
	for _, r := range Rules {
		pats = append(pats, r.match)
	}
	var names []string
	for _, r := range Rules {
		names = append(names, r.Examples...)
	}
	deciding := 0
	for _, p := range pats {
		if !p.decides {
			continue
		}
		deciding++
		cases := slices.Clone(names)
		for _, lit := range p.needs {
			cases = append(cases, lit, "x"+strings.ToUpper(lit)+"y", lit[:len(lit)-1])
		}
		for _, name := range cases {
			for _, n := range []string{name, strings.ToUpper(name), strings.ToLower(name)} {
				if !isASCII(n) {
					continue
				}
				if m, held := p.re().MatchString(n), p.mayMatch(n); m != held {
					t.Errorf("%s on %.80q: matches %v, holds a literal %v", p.re(), n, m, held)
				}
			}
		}
	}
	if deciding == 0 {
		t.Error("no pattern decides: the test checks nothing")
	}
	for _, pattern := range []string{`[Tt]ranspose`, `transpose`, `(?i)^gemm`, `(?i)gemm\b`, `(?i)[ab]c`, `(?i)ab?c`} {
		if newFiltered(pattern).decides {
			t.Errorf("%s decides, but its literals are not its matches", pattern)
		}
	}
	if !newFiltered(`(?i)gemm|conv_(fw|bw)d`).decides {
		t.Error("(?i)gemm|conv_(fw|bw)d does not decide")
	}
}
