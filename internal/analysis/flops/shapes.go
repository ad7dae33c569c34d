package flops

import (
	"encoding/json"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"strconv"
	"strings"
)

// Shapes is what a recorded op says about its inputs (record_shapes=True):
// "Input Dims" (one shape per input; [] for scalars and None), "Input
// type" and "Concrete Inputs" (scalar and list arguments as text).
type Shapes struct {
	Dims     [][]int64
	Types    []string
	Concrete []string
}

// ParseShapes reads the three arguments as the profiler writes them (JSON
// lists). Inputs that are not plain shapes (tensor lists) parse as nil.
func ParseShapes(dims, types, concrete string) Shapes {
	var s Shapes
	var raw []json.RawMessage
	if json.Unmarshal([]byte(dims), &raw) == nil {
		s.Dims = make([][]int64, len(raw))
		for i, r := range raw {
			var d []int64
			if json.Unmarshal(r, &d) == nil {
				s.Dims[i] = d
			}
		}
	}
	json.Unmarshal([]byte(types), &s.Types)
	json.Unmarshal([]byte(concrete), &s.Concrete)
	return s
}

// Cost is one call's work: FLOPs and the minimum bytes it must move (each
// tensor input read once, the output written once; 0 when the element
// type is unknown).
type Cost struct {
	Flops, Bytes float64
}

// FromShapes returns the cost of one call of op from its input shapes,
// with the formulas of torch.utils.flop_counter (a multiply-add is 2
// FLOPs; bias adds and softmax are not counted), and false when op is not
// one it covers or the shapes do not fit. Covered: aten::mm, addmm, bmm,
// baddbmm, convolution (1d/2d/3d, transposed, groups, stride, padding,
// dilation) and the fused scaled-dot-product-attention kernels (flash,
// efficient, cuDNN, CPU flash). Composite ops (linear, matmul, conv2d,
// scaled_dot_product_attention) are not covered: their children are, and
// counting both would count twice.
func FromShapes(op string, s Shapes) (Cost, bool) {
	d := s.Dims
	var flops, out float64 // out: output elements
	inputs := 2            // tensor inputs read
	switch op {
	case "aten::mm":
		if len(d) < 2 || len(d[0]) != 2 || len(d[1]) != 2 {
			return Cost{}, false
		}
		flops, out = mmFlops(1, d[0][0], d[0][1], d[1][1]), float64(d[0][0]*d[1][1])
	case "aten::addmm":
		if len(d) < 3 || len(d[1]) != 2 || len(d[2]) != 2 {
			return Cost{}, false
		}
		flops, out, inputs = mmFlops(1, d[1][0], d[1][1], d[2][1]), float64(d[1][0]*d[2][1]), 3
	case "aten::bmm":
		if len(d) < 2 || len(d[0]) != 3 || len(d[1]) != 3 {
			return Cost{}, false
		}
		flops, out = mmFlops(d[0][0], d[0][1], d[0][2], d[1][2]), float64(d[0][0]*d[0][1]*d[1][2])
	case "aten::baddbmm":
		if len(d) < 3 || len(d[1]) != 3 || len(d[2]) != 3 {
			return Cost{}, false
		}
		flops, out, inputs = mmFlops(d[1][0], d[1][1], d[1][2], d[2][2]), float64(d[1][0]*d[1][1]*d[2][2]), 3
	case "aten::convolution":
		var ok bool
		if flops, out, ok = convCost(s); !ok {
			return Cost{}, false
		}
		inputs = 3
	case "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
		"aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu":
		// q [b, h, s_q, d], k [b, h, s_k, d], v [b, h, s_k, d_v]: QK^T and PV.
		if len(d) < 3 || len(d[0]) != 4 || len(d[1]) != 4 || len(d[2]) != 4 {
			return Cost{}, false
		}
		bh := d[0][0] * d[0][1]
		flops = mmFlops(bh, d[0][2], d[0][3], d[1][2]) + mmFlops(bh, d[0][2], d[1][2], d[2][3])
		out, inputs = float64(bh*d[0][2]*d[2][3]), 3
	default:
		return Cost{}, false
	}
	c := Cost{Flops: flops}
	if len(s.Types) > 0 {
		if es := elemSize[classify.Dtype(s.Types[0])]; es > 0 {
			elems := out
			for _, dims := range d[:min(inputs, len(d))] {
				if len(dims) > 0 {
					elems += float64(numel(dims))
				}
			}
			c.Bytes = es * elems
		}
	}
	return c, true
}

var elemSize = map[string]float64{"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

func numel(d []int64) int64 {
	n := int64(1)
	for _, v := range d {
		n *= v
	}
	return n
}

// coveredOps are the op names FromShapes knows.
var coveredOps = map[string]bool{
	"aten::mm": true, "aten::addmm": true, "aten::bmm": true, "aten::baddbmm": true, "aten::convolution": true,
	"aten::_scaled_dot_product_flash_attention": true, "aten::_scaled_dot_product_efficient_attention": true,
	"aten::_scaled_dot_product_cudnn_attention": true, "aten::_scaled_dot_product_flash_attention_for_cpu": true,
}

func mmFlops(b, m, k, n int64) float64 { return 2 * float64(b) * float64(m) * float64(k) * float64(n) }

// convCost: aten::convolution(input, weight, bias, stride, padding,
// dilation, transposed, output_padding, groups). FLOPs = 2 * batch *
// prod(spatial) * c_out * c_in * prod(kernel), where weight is
// [c_out, c_in/groups, k...] (transposed: [c_in, c_out/groups, k...]) and
// spatial is the output's spatial size (transposed: the input's), as in
// torch.utils.flop_counter.conv_flop_count. It also returns the output's
// element count.
func convCost(s Shapes) (flops, out float64, ok bool) {
	d := s.Dims
	if len(d) < 2 || len(d[0]) < 3 || len(d[1]) != len(d[0]) {
		return 0, 0, false
	}
	x, w := d[0], d[1]
	nsp := len(x) - 2
	transposed := len(s.Concrete) > 6 && strings.EqualFold(s.Concrete[6], "true")
	stride, ok1 := intList(s.Concrete, 3, nsp, 1)
	pad, ok2 := intList(s.Concrete, 4, nsp, 0)
	dil, ok3 := intList(s.Concrete, 5, nsp, 1)
	outPad, ok4 := intList(s.Concrete, 7, nsp, 0)
	groups, ok5 := intList(s.Concrete, 8, 1, 1)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return 0, 0, false
	}
	inSpatial, outSpatial := float64(1), float64(1)
	for i := 0; i < nsp; i++ {
		var o int64
		if transposed {
			o = (x[2+i]-1)*stride[i] - 2*pad[i] + dil[i]*(w[2+i]-1) + outPad[i] + 1
		} else {
			o = (x[2+i]+2*pad[i]-dil[i]*(w[2+i]-1)-1)/stride[i] + 1
		}
		if o <= 0 {
			return 0, 0, false
		}
		inSpatial *= float64(x[2+i])
		outSpatial *= float64(o)
	}
	spatial, cOut := outSpatial, float64(w[0])
	if transposed {
		spatial, cOut = inSpatial, float64(w[1]*groups[0])
	}
	kernel := float64(numel(w[2:]))
	return 2 * float64(x[0]) * spatial * float64(w[0]) * float64(w[1]) * kernel, float64(x[0]) * cOut * outSpatial, true
}

// intList reads Concrete Inputs entry i, a list like "[2, 2]" (or one
// number, broadcast), as n integers; def when the entry is absent.
func intList(c []string, i, n int, def int64) ([]int64, bool) {
	out := make([]int64, n)
	if i >= len(c) || strings.TrimSpace(c[i]) == "" {
		for j := range out {
			out[j] = def
		}
		return out, true
	}
	parts := strings.Split(strings.Trim(strings.TrimSpace(c[i]), "[]"), ",")
	for j := range out {
		p := parts[0]
		if len(parts) == n {
			p = parts[j]
		} else if len(parts) != 1 {
			return nil, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, false
		}
		out[j] = v
	}
	return out, true
}
