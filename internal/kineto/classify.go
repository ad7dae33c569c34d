package kineto

import (
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// kindOf maps a category name from any trace era to a Kind. Unknown device
// categories are recognised by their words so new accelerators (mtia_*,
// xpu_*) are read without error.
func kindOf(cat string) trace.Kind {
	c := strings.ToLower(cat)
	switch c {
	case "cpu_op", "operator":
		return trace.KindCPUOp
	case "user_annotation":
		return trace.KindUserAnnotation
	case "gpu_user_annotation":
		return trace.KindGPUAnnotation
	case "python_function", "python":
		return trace.KindPythonFunction
	case "kernel", "mtia_ccp_events":
		return trace.KindKernel
	case "gpu_memcpy", "memcpy":
		return trace.KindMemcpy
	case "gpu_memset", "memset":
		return trace.KindMemset
	case "cuda_sync":
		return trace.KindDeviceSync
	case "trace":
		return trace.KindTraceSpan
	case "cpu_instant_event":
		return trace.KindInstant
	}
	switch {
	case strings.HasSuffix(c, "runtime"):
		return trace.KindRuntime
	case strings.HasSuffix(c, "driver"):
		return trace.KindDriver
	case strings.Contains(c, "kernel"):
		return trace.KindKernel
	case strings.Contains(c, "memcpy"):
		return trace.KindMemcpy
	case strings.Contains(c, "memset"):
		return trace.KindMemset
	case strings.HasPrefix(c, "gpu_") || strings.HasPrefix(c, "cuda_") || strings.HasPrefix(c, "mtia_") ||
		strings.HasPrefix(c, "xpu_") || strings.HasPrefix(c, "hip_"):
		return trace.KindDeviceOther
	}
	return trace.KindOther
}

// legacyKind classifies events of the autograd profiler's export, which
// have no category: the pid says which side they ran on.
func legacyKind(pidLabel string) (trace.Kind, bool) {
	switch pidLabel {
	case "CPU functions":
		return trace.KindCPUOp, true
	case "CUDA functions":
		return trace.KindKernel, true
	}
	return 0, false
}
