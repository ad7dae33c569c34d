package kernels

import (
	"fmt"
	"strings"
)

// Markdown renders the table as docs/kernels.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Kernel semantics\n\n")
	b.WriteString("<!-- Generated from internal/analysis/kernels (rules.go, kernels.go); regenerate with\n")
	b.WriteString("     BOTTLENECK_UPDATE=1 go test ./internal/analysis/kernels/ -->\n\n")
	b.WriteString("bottleneck names what every device kernel is from its name: the family of work, the math unit its main loop\n")
	b.WriteString("runs on (tensor/matrix cores, `tensor`; CUDA cores/vector ALUs, `simt`) and the precision. The rules are tried\n")
	b.WriteString("in order and the first match decides. A kernel no rule matches is reported as unknown, never guessed; a\n")
	b.WriteString("rule that knows the family but not the unit leaves the unit empty, and such kernels count on neither side of\n")
	b.WriteString("the tensor-core share or the precision advice.\n\n")
	b.WriteString("The tensor-core share (GPU section) is the kernel time of kernels with unit `tensor`. The precision advice\n")
	b.WriteString("(`gpu.precision`) counts GEMM/convolution kernels with unit `simt` and precision fp32 only: FP8/FP4/bf16\n")
	b.WriteString("kernels are never told to use bf16. The precision step in `gpu.kernels`' change follows the precision\n")
	b.WriteString("holding half or more of the GEMM/convolution kernel time: FP8/FP4/int8 kernels get none (never \"lower\n")
	b.WriteString("precision\"); bf16/fp16 kernels get FP8 as an experiment only on devices with FP8 units (NVIDIA compute\n")
	b.WriteString("capability 8.9 and later, AMD MI300 and later, through ROCm's libraries on AMD); TF32 kernels get bf16\n")
	b.WriteString("autocast (docs/diagnosis.md).\n\n")
	b.WriteString("Communication kernels (NCCL/RCCL, DeepEP and NCCL EP dispatch/combine, NVSHMEM, symmetric memory, gloo)\n")
	b.WriteString("count as communication, never as the maths or copies their names also suggest.\n\n")
	b.WriteString("## Rules\n\n| # | rule | pattern (Go regexp) | family | unit | precision | evidence | example |\n|---|---|---|---|---|---|---|---|\n")
	for i, r := range Rules {
		prec := r.Precision
		if prec == "" {
			prec = "from name"
			if r.Family == Communication || r.Family == Sleep {
				prec = "-"
			}
		}
		ex := ""
		if len(r.Examples) > 0 {
			ex = "`" + cell(short(r.Examples[0])) + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %s | %s | %s | %s |\n", i+1, r.ID, cell(r.Pattern), r.Family, cmpOr(string(r.Unit), "-"), prec, cell(r.Evidence), ex)
	}
	b.WriteString("\n## Precision from the name\n\n")
	b.WriteString("For GEMM, convolution and attention kernels the first matching fragment gives the precision. Tensile\n")
	b.WriteString("(`Cijk_...`) names carry the input type in their fourth field (B bf16, H fp16, S fp32, D fp64, F8/B8 fp8,\n")
	b.WriteString("I8 int8). Other families take the first scalar type among the C++ template arguments (`<float, ...>`,\n")
	b.WriteString("`c10::BFloat16`, `__half`, ...), or none.\n\n| precision | pattern | evidence |\n|---|---|---|\n")
	for _, p := range Precisions {
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", p.Precision, cell(p.Pattern), cell(p.Evidence))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func short(s string) string {
	if len(s) > 90 {
		return s[:90] + "..."
	}
	return s
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
