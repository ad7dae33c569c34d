// Package kernels says what a device kernel is, from its name: its family
// (GEMM, convolution, attention, elementwise, ..., communication), the
// math unit it runs on (tensor/matrix cores or the CUDA/vector cores) and
// its precision. The knowledge is data: Rules, an ordered table of name
// patterns, each with the evidence it rests on and real kernel names it
// must match (tested, and rendered to docs/kernels.md by Markdown).
//
// A name that no rule matches is Unknown: the package never guesses. A
// rule that knows the family but not the math unit (a generic "gemm"
// name) leaves Unit empty, and callers count such kernels on neither side.
package kernels

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Family is what a kernel computes.
type Family string

const (
	Unknown       Family = ""
	GEMM          Family = "gemm"          // matrix products, incl. GEMV and split-K helpers
	Conv          Family = "conv"          // convolutions (implicit GEMM, Winograd, FFT, direct)
	Attention     Family = "attention"     // fused attention (flash, memory-efficient, paged)
	Elementwise   Family = "elementwise"   // pointwise maths, fills, casts, optimizer updates
	Reduction     Family = "reduction"     // sums, means, norms of tensors, split reductions
	Norm          Family = "norm"          // layer/batch/group/RMS normalisation
	Softmax       Family = "softmax"       // softmax and log-softmax
	Copy          Family = "copy"          // copies, concatenation, transposes, layout changes
	Indexing      Family = "indexing"      // gather/scatter/index/embedding lookups
	Pooling       Family = "pooling"       // max/average pooling
	Sort          Family = "sort"          // sort, scan, top-k, search
	Communication Family = "communication" // NCCL/RCCL/MSCCL, DeepEP, NVSHMEM, symmetric memory, gloo
	Sleep         Family = "sleep"         // deliberate busy-waits (torch.cuda._sleep)
)

// IsMath reports whether a family's time is bounded by a math unit
// (GEMM, convolution, attention), so that the math unit and precision
// matter.
func (f Family) IsMath() bool { return f == GEMM || f == Conv || f == Attention }

// FP32OnVectorCores reports whether a kernel is GEMM/convolution maths
// that TF32 or bf16/fp16 would move onto tensor cores: FP32 kernels on CUDA
// cores by the kernel table. Matrix-vector kernels are left out (memory
// bound: cuBLAS runs them on CUDA cores whatever the precision), and so are
// kernels whose math unit the table does not know, and FP8/FP4/bf16/fp16
// kernels, which already have the fast path.
func (k Kind) FP32OnVectorCores() bool {
	return (k.Family == GEMM || k.Family == Conv) && k.Unit == VectorCore && k.Precision == "fp32" && k.Rule != "gemv"
}

// Unit is the math unit a kernel's main loop runs on.
type Unit string

const (
	// UnitUnknown: not a math kernel, or the name does not say.
	UnitUnknown Unit = ""
	// TensorCore: NVIDIA tensor cores (HMMA/IMMA/wgmma/tcgen05) or AMD
	// matrix cores (MFMA/xdlops/WMMA).
	TensorCore Unit = "tensor"
	// VectorCore: CUDA cores (FFMA) or AMD vector ALUs.
	VectorCore Unit = "simt"
)

// Kind is what Classify found for one kernel name.
type Kind struct {
	Family Family `json:"family"`
	Unit   Unit   `json:"unit"`
	// Precision of the math (math families) or of the data (others):
	// fp64, fp32, tf32, bf16, fp16, fp8, fp4, int8; "" when the name does
	// not say.
	Precision string `json:"precision"`
	// Rule is the ID of the rule that matched ("" for Unknown).
	Rule string `json:"rule"`
}

// Rule is one row of the table.
type Rule struct {
	ID string
	// Pattern is a Go regexp matched against the kernel name.
	Pattern string
	Family  Family
	Unit    Unit
	// Precision is fixed when set; else inferred from the name (see
	// Precisions).
	Precision string
	// Evidence: why names matching Pattern are what the rule says.
	Evidence string
	// Examples are real kernel names (traces in testdata/traces, or the
	// libraries' sources) the rule must classify; tested.
	Examples []string

	// match is Pattern, compiled on first use, with the literals one of
	// which every name it matches holds.
	match *filtered
}

// Classify says what the kernel called name is.
//
// Matching the table costs tens of µs per name, and the analyses and the
// diagnosis ask about the same few hundred names several times each (the
// regular expressions were 7% of `analyze`'s CPU), so answers are kept,
// for up to maxKnown names a process.
func Classify(name string) Kind {
	known.RLock()
	k, ok := known.kinds[name]
	known.RUnlock()
	if ok {
		return k
	}
	k = classify(name)
	known.Lock()
	if len(known.kinds) < maxKnown {
		known.kinds[strings.Clone(name)] = k // the caller's name may view a buffer that is reused
	}
	known.Unlock()
	return k
}

// maxKnown bounds the names Classify remembers: a trace with a name per
// launch must not grow the process without bound.
const maxKnown = 1 << 16

var known = struct {
	sync.RWMutex
	kinds map[string]Kind
}{kinds: map[string]Kind{}}

func classify(name string) Kind {
	prepareRules()
	// Go's regexps cost ~30 µs each on a 250-byte templated name, and most
	// rules cannot match it: a rule runs only when the name holds one of
	// the literals its pattern requires (10-40x less time per name).
	// Non-ASCII names skip the filter: case folding beyond ASCII
	// (Kelvin sign, long s) is not what strings.ToLower does.
	var held []bool // by rule, when filtered: the name holds one of its literals
	if isASCII(name) {
		held = ruleLiterals.holding(strings.ToLower(name))
	}
	for i := range Rules {
		r := &Rules[i]
		if held != nil && r.match.needs != nil && !held[i] {
			continue
		}
		if !(held != nil && r.match.decides) && !r.match.re().MatchString(name) {
			continue
		}
		k := Kind{Family: r.Family, Unit: r.Unit, Precision: r.Precision, Rule: r.ID}
		if k.Precision == "" && r.Family != Communication && r.Family != Sleep {
			k.Precision = precisionOf(name, r.Family.IsMath())
		}
		return k
	}
	return Kind{}
}

// Precisions lists, in the order tried, the name fragments that give a
// math kernel's precision (the first that matches wins: "bf16" is tried
// before "f16", "tf32" before "f32"). Tensile names (Cijk_...) carry the
// data type in their fourth field instead (see tensilePrecision).
var Precisions = []struct {
	Precision string
	Pattern   string
	Evidence  string
}{
	{"fp4", `(?i)mxfp4|nvfp4|e2m1|fp4`, "OCP MX / NVIDIA FP4 type names (mxfp4, nvfp4, float_e2m1_t)"},
	{"fp8", `(?i)e4m3|e5m2|fp8|float8|f8f6f4|nvjet_(sm\d+_)?qq`, "FP8 type names (float_e4m3_t, e5m2, fp8, Float8_e4m3fn); cuBLASLt nvjet kernels whose type letters start qq (nvjet_qqtst_*: e4m3 A and B, the kernels of torch._scaled_mm)"},
	{"int8", `(?i)int8|i8816|i16832|imma|_s8_|s8s8|u8s8`, "integer MMA tiles (i8816, i16832, IMMA) and int8/s8 type names"},
	{"bf16", `(?i)bf16|bfloat16|nvjet_(sm\d+_)?t`, "bf16 type names (bf16, cutlass::bfloat16_t, c10::BFloat16, __nv_bfloat16); cuBLASLt nvjet kernels whose type letters start t (nvjet_sm90_tst_*: the bf16-autocast GEMMs of testdata/rundir/h100/compile_gpu)"},
	{"fp16", `(?i)f16|half|h884|h1688|h16816|hmma|hgemm|hcudnn`, "fp16 type names (f16, fp16, __half, c10::Half, half_t) and cuBLAS/cuDNN h-prefixed tiles (h884, h1688, h16816)"},
	{"tf32", `(?i)tf32|tfloat32|s1688|s16816`, "TF32 names (tf32, tfloat32_t) and the s1688/s16816 tiles of fp32-data tensor-core kernels (checked after fp16/bf16, which use the same tiles with fp32 accumulation)"},
	{"fp64", `(?i)f64|double|dgemm|dmma`, "fp64 names (f64, double, dgemm, DMMA)"},
	{"fp32", `(?i)f32|float|sgemm|scudnn|ffma`, "fp32 names (f32, float, s-prefixed cuBLAS/cuDNN kernels: sgemm, scudnn; FFMA)"},
}

// templateTypes finds a scalar type among a C++ kernel's template
// arguments, for kernels outside the math families: a data precision.
// Parenthesised parts (function parameters, lambda signatures: a double
// momentum argument, a float accumulator) are removed first (noParams).
var templateTypes = sync.OnceValue(func() *filtered {
	return newFiltered(`[<,]\s*(float|double|c10::Half|c10::BFloat16|at::Half|at::BFloat16|__half|__nv_bfloat16|__hip_bfloat16)\s*[,>]`)
})

// noParams returns name without its parenthesised parts.
func noParams(name string) string {
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var templatePrecision = map[string]string{
	"float": "fp32", "double": "fp64", "c10::Half": "fp16", "at::Half": "fp16", "__half": "fp16",
	"c10::BFloat16": "bf16", "at::BFloat16": "bf16", "__nv_bfloat16": "bf16", "__hip_bfloat16": "bf16",
}

// notAType removes fragments that name a type without using it: vLLM's
// Fp8KVCacheDataType enum appears in every attention/cache kernel, fp8 or not.
var notAType = sync.OnceValue(func() *filtered { return newFiltered(`(?i)fp8kvcachedatatype`) })

// filtered is a regexp, compiled on first use, and the literals one of
// which its every match holds (requiredLiterals), looked for first: most
// patterns cannot match a given name, and Go's regexps run slowly on
// case-insensitive patterns. Compiling every pattern up front was half
// of classifying a small trace's kernels (most rules never pass the
// filter) and a twentieth of the process's start.
type filtered struct {
	needs []string
	re    func() *regexp.Regexp
	// decides: the pattern is case-insensitive ASCII literals only, so an
	// ASCII name it matches is one that holds one of needs, and the regexp
	// need not run.
	decides bool
}

func newFiltered(pattern string) *filtered {
	f := &filtered{re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })}
	if re, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		f.needs = requiredLiterals(re)
		f.decides = f.needs != nil && foldedLiterals(re)
	} else {
		f.re() // panics: a bad pattern is the program's bug
	}
	return f
}

// foldedLiterals reports whether re is made of case-folded ASCII literals
// only (alternated, concatenated, grouped): no class, repeat or
// assertion. Such a pattern matches an ASCII name exactly when the
// lowercased name holds one of its strings lowercased.
func foldedLiterals(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return re.Flags&syntax.FoldCase != 0 && isASCII(string(re.Rune))
	case syntax.OpAlternate, syntax.OpConcat, syntax.OpCapture:
		for _, sub := range re.Sub {
			if !foldedLiterals(sub) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// mayMatch is false when s cannot match (it holds none of the literals).
func (f *filtered) mayMatch(s string) bool {
	return f.needs == nil || !isASCII(s) || containsAny(strings.ToLower(s), f.needs)
}

// precisionPatterns are Precisions' patterns, filtered.
var precisionPatterns = sync.OnceValue(func() []*filtered {
	ps := make([]*filtered, len(Precisions))
	for i, p := range Precisions {
		ps[i] = newFiltered(p.Pattern)
	}
	return ps
})

func precisionOf(name string, math bool) string {
	if !math {
		bare := noParams(name)
		if !templateTypes().mayMatch(bare) {
			return ""
		}
		if m := templateTypes().re().FindStringSubmatch(bare); m != nil {
			return templatePrecision[m[1]]
		}
		return ""
	}
	if p, ok := tensilePrecision(name); ok {
		return p
	}
	if notAType().mayMatch(name) {
		name = notAType().re().ReplaceAllString(name, "")
	}
	lower, filter := strings.ToLower(name), isASCII(name) // as in classify
	for i, p := range precisionPatterns() {
		if filter && p.needs != nil && !containsAny(lower, p.needs) {
			continue
		}
		if filter && p.decides || p.re().MatchString(name) {
			return Precisions[i].Precision
		}
	}
	return ""
}

// tensilePrecision reads a Tensile (rocBLAS/hipBLASLt) kernel name,
// Cijk_<A layout>_<B layout>_<types>_..., whose fourth field starts with
// the input data type: S fp32, D fp64, H fp16, B bf16, F8/B8 fp8, I8 int8.
func tensilePrecision(name string) (string, bool) {
	if !strings.HasPrefix(name, "Cijk_") {
		return "", false
	}
	f := strings.SplitN(name, "_", 5)
	if len(f) < 4 {
		return "", true
	}
	t := f[3]
	switch {
	case strings.HasPrefix(t, "F8"), strings.HasPrefix(t, "B8"):
		return "fp8", true
	case strings.HasPrefix(t, "I8"), strings.HasPrefix(t, "4xi8"):
		return "int8", true
	case strings.HasPrefix(t, "B"):
		return "bf16", true
	case strings.HasPrefix(t, "H"):
		return "fp16", true
	case strings.HasPrefix(t, "S"):
		return "fp32", true
	case strings.HasPrefix(t, "D"):
		return "fp64", true
	}
	return "", true
}

// prepareRules finds the rules' literals once, on the first name
// classified (a trace without kernels, CPU-only, never needs them); each
// rule's pattern is compiled when a name first passes its filter.
var prepareRules = sync.OnceFunc(func() {
	needs := make([][]string, len(Rules))
	for i := range Rules {
		Rules[i].match = newFiltered(Rules[i].Pattern)
		needs[i] = Rules[i].match.needs
	}
	ruleLiterals = newLiterals(needs)
})

// ruleLiterals are the rules' literals (prepareRules).
var ruleLiterals *literals

// requiredLiterals returns lowercased strings one of which every match of
// re contains, or nil when it knows none (a pattern that can match
// without any literal, such as `\w+` or `a?`). Parts that match a few
// strings only (a literal, `[Tt]`, `(void )?`, an alternation of such,
// and their concatenations) are taken whole: Go's parser factors
// `ncclKernel|ncclDevKernel` into `nccl(?:Kernel|DevKernel)`, whose
// alternatives alone would be "kernel" (in most names), the two whole
// "ncclkernel".
func requiredLiterals(re *syntax.Regexp) []string {
	if set, ok := exactStrings(re); ok {
		return usable(set)
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		// Any part's literals will do, or a run of consecutive parts
		// whose strings are known; the longest shortest one filters best.
		var best []string
		consider := func(lits []string) {
			if lits != nil && (best == nil || shortest(lits) > shortest(best)) {
				best = lits
			}
		}
		run := []string{""} // the strings of the current run of known parts
		for _, sub := range re.Sub {
			set, ok := exactStrings(sub)
			if ok {
				if joined := crossProduct(run, set); joined != nil {
					run = joined
					continue
				}
			} else {
				consider(requiredLiterals(sub))
				set = []string{""}
			}
			// the run ends here; a part too many to join starts the next
			consider(usable(run))
			run = set
		}
		consider(usable(run))
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits := requiredLiterals(sub)
			if lits == nil {
				return nil
			}
			all = append(all, lits...)
		}
		return minimal(all)
	}
	return nil
}

// maxExact bounds the strings exactStrings and crossProduct return;
// maxClass the characters of a class taken as strings (`[Tt]`, `[_-]`: a
// wider class, such as `[a-z]`, is no literal worth looking for).
const (
	maxExact = 32
	maxClass = 4
)

// exactStrings returns, lowercased, every string re can match, when they
// are at most maxExact and ASCII (a case-folded non-ASCII letter can
// match an ASCII one that strings.ToLower does not give: the long s
// matches s). Zero-width assertions match the empty string: what they
// require is about the text around a match, not in it.
func exactStrings(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		s := string(re.Rune)
		if !isASCII(s) {
			return nil, false
		}
		return []string{strings.ToLower(s)}, true
	case syntax.OpCharClass:
		var set []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf || hi-lo >= maxClass {
				return nil, false
			}
			for r := lo; r <= hi; r++ {
				if s := strings.ToLower(string(r)); !slices.Contains(set, s) {
					set = append(set, s)
				}
			}
			if len(set) > maxClass {
				return nil, false
			}
		}
		return set, len(set) > 0
	case syntax.OpCapture:
		return exactStrings(re.Sub[0])
	case syntax.OpQuest:
		set, ok := exactStrings(re.Sub[0])
		if !ok || len(set) >= maxExact {
			return nil, false
		}
		if !slices.Contains(set, "") {
			set = append(set, "")
		}
		return set, true
	case syntax.OpConcat:
		set := []string{""}
		for _, sub := range re.Sub {
			part, ok := exactStrings(sub)
			if !ok {
				return nil, false
			}
			if set = crossProduct(set, part); set == nil {
				return nil, false
			}
		}
		return set, true
	case syntax.OpAlternate:
		var set []string
		for _, sub := range re.Sub {
			part, ok := exactStrings(sub)
			if !ok {
				return nil, false
			}
			for _, s := range part {
				if !slices.Contains(set, s) {
					set = append(set, s)
				}
			}
			if len(set) > maxExact {
				return nil, false
			}
		}
		return set, true
	}
	return nil, false
}

// crossProduct returns every a+b, nil when they would be more than maxExact.
func crossProduct(as, bs []string) []string {
	if len(as)*len(bs) > maxExact {
		return nil
	}
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			if s := a + b; !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// usable returns set as a filter, nil when it holds the empty string (which
// every name contains).
func usable(set []string) []string {
	if len(set) == 0 || slices.Contains(set, "") {
		return nil
	}
	return minimal(set)
}

// minimal drops the strings that contain another of lits: a name that
// holds one holds the other, so the filter passes the same names.
func minimal(lits []string) []string {
	out := make([]string, 0, len(lits))
	for i, l := range lits {
		redundant := false
		for j, o := range lits {
			if j != i && strings.Contains(l, o) && (len(o) < len(l) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, l)
		}
	}
	return out
}

func shortest(lits []string) int {
	n := len(lits[0])
	for _, l := range lits[1:] {
		n = min(n, len(l))
	}
	return n
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
