
# ---- The rest is the same in every script `bottleneck repro` writes. ----

DTYPES = {
    "float": torch.float32, "double": torch.float64, "c10::Half": torch.float16,
    "c10::BFloat16": torch.bfloat16, "long int": torch.int64, "int": torch.int32,
    "short int": torch.int16, "signed char": torch.int8, "unsigned char": torch.uint8,
    "bool": torch.bool, "c10::complex<float>": torch.complex64, "c10::complex<double>": torch.complex128,
}


def tensor(shape, strides, type_name, device):
    """A tensor with the recorded shape, strides and dtype, over a storage
    just large enough for them (offset 0). Floating values are random;
    integer and bool tensors are zeros, a valid index for any dimension."""
    dtype = DTYPES.get(type_name)
    if dtype is None:
        raise SystemExit("repro: input type %r is not one this script can build" % (type_name,))
    if strides is None:
        strides = torch.empty(shape, device="meta").stride()
    if any(n == 0 for n in shape):
        size = 0
    else:
        size = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    if dtype.is_floating_point or dtype.is_complex:
        base = torch.randn(size, dtype=dtype, device=device)
    else:
        base = torch.zeros(size, dtype=dtype, device=device)
    return base.as_strided(shape, strides)


def resolve():
    """The op's packet, torch.ops.<namespace>.<name>."""
    try:
        return getattr(getattr(torch.ops, OP_NAMESPACE), OP_NAME)
    except (AttributeError, RuntimeError) as e:
        raise SystemExit("repro: torch %s has no op %r: %s" % (torch.__version__, OP, e))


def bind(packet, args):
    """The call of args with the first overload of packet that takes them:
    the trace records arguments in schema order, keyword-only ones too, so
    they are passed by name where the schema says so. Returns a function of
    the argument list."""
    errors = []
    for overload in packet.overloads():
        op = getattr(packet, overload)
        schema = op._schema
        if len(args) > len(schema.arguments):
            continue
        positional, keywords = [], {}
        for value, arg in zip(args, schema.arguments):
            if arg.kwarg_only:
                keywords[arg.name] = value
            else:
                positional.append(value)

        def call(a, op=op, n=len(positional), names=list(keywords)):
            return op(*a[:n], **dict(zip(names, a[n:])))

        try:
            with torch.no_grad():
                call(args)
        except Exception as e:  # the next overload may fit
            errors.append("%s: %s" % (overload, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        return call
    raise SystemExit("repro: no overload of %r takes the recorded arguments:\n  %s" % (OP, "\n  ".join(errors)))


def median_seconds(fn, device, min_time):
    """The median time of one call of fn after a warm-up: between CUDA events
    on a GPU (blocks of calls, each block's time over its calls), else
    torch.utils.benchmark.Timer's blocked_autorange, on this process's
    threads."""
    with torch.no_grad():
        for _ in range(3):
            fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(5):
                fn()
            end.record()
            end.synchronize()
            guess = max(start.elapsed_time(end) / 1e3 / 5, 1e-7)
            per_block = max(1, int(0.01 / guess))  # blocks of ~10 ms
            samples, spent = [], 0.0
            while len(samples) < 5 or spent < min_time:
                start.record()
                for _ in range(per_block):
                    fn()
                end.record()
                end.synchronize()
                block = start.elapsed_time(end) / 1e3
                samples.append(block / per_block)
                spent += block
            return statistics.median(samples)
        timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
        return timer.blocked_autorange(min_run_time=min_time).median


def apply_settings():
    """The recorded run's backend settings that change this op."""
    for name, value in SETTINGS.items():
        if name == "matmul_allow_tf32":
            torch.backends.cuda.matmul.allow_tf32 = value
        elif name == "cudnn_allow_tf32":
            torch.backends.cudnn.allow_tf32 = value
        elif name == "cudnn_benchmark":
            torch.backends.cudnn.benchmark = value
        elif name == "float32_matmul_precision":
            torch.set_float32_matmul_precision(value)
        elif name == "num_threads":
            torch.set_num_threads(value)


def variant(name, args, device):
    """(function of no arguments, None) for variant name, or (None, why
    it does not apply here)."""
    first = args[0] if args and isinstance(args[0], torch.Tensor) else None
    floating32 = first is not None and first.dtype == torch.float32
    if name == "channels_last":
        if first is None or first.dim() not in (4, 5):
            return None, "needs a 4-d or 5-d input"
        fmt = torch.channels_last if first.dim() == 4 else torch.channels_last_3d
        if first.is_contiguous(memory_format=fmt) and not first.is_contiguous():
            return None, "the input is channels_last already"
        changed = list(args)
        for i in (0, 1):  # input and weight, converted once before timing, as a model converted with .to(memory_format=...) would be
            if isinstance(changed[i], torch.Tensor) and changed[i].dim() == first.dim():
                changed[i] = changed[i].contiguous(memory_format=fmt)
        call = bind(PACKET, changed)
        return (lambda: call(changed)), None
    if not device.startswith("cuda"):
        return None, "needs CUDA (this run is on %s)" % device
    if name == "tf32":
        if not floating32:
            return None, "the inputs are not float32"
        if tf32_on():
            return None, "TF32 is on already for this op (the recorded run's settings)"
        call = bind(PACKET, args)

        def tf32():
            old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
            try:
                return call(args)
            finally:
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old

        return tf32, None
    if name in ("autocast_bf16", "autocast_fp16"):
        dtype = torch.bfloat16 if name == "autocast_bf16" else torch.float16
        if not floating32:
            return None, "the inputs are not float32"
        if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
            return None, "this GPU has no bf16"
        with torch.autocast("cuda", dtype=dtype), torch.no_grad():
            out = bind(PACKET, args)(args)
        out = out[0] if isinstance(out, (tuple, list)) else out
        if not isinstance(out, torch.Tensor) or out.dtype != dtype:
            return None, "autocast leaves this op in its input dtype (not on autocast's list)"

        def autocast():
            with torch.autocast("cuda", dtype=dtype):
                return PACKET_CALL(args)

        return autocast, None
    return None, "unknown variant"


def tf32_on():
    """Whether this op runs in TF32 now: cuDNN's flag for convolutions,
    cuBLAS's for the rest."""
    if CONVOLUTION:
        return torch.backends.cudnn.allow_tf32
    return torch.backends.cuda.matmul.allow_tf32


def fmt_time(s):
    if s >= 1e-3:
        return "%.3f ms" % (s * 1e3)
    return "%.1f us" % (s * 1e6)


def rates(seconds, peak_key, recorded_dtype=True):
    """Achieved TFLOP/s and GB/s (the latter for the recorded dtypes only,
    whose bytes BYTES counts), each with its share of the trace device's
    peak."""
    out = []
    if FLOPS:
        tflops = FLOPS / seconds / 1e12
        peak = PEAK_TFLOPS.get(peak_key, 0)
        out.append("%.3g TFLOP/s" % tflops + (" (%.1f%% of %s %s peak)" % (100 * tflops / peak, PEAK_DEVICE, peak_key) if peak else ""))
    if BYTES and recorded_dtype:
        gbs = BYTES / seconds / 1e9
        out.append("%.3g GB/s" % gbs + (" (%.1f%% of %s bandwidth)" % (100 * gbs / BANDWIDTH_GBS, PEAK_DEVICE) if BANDWIDTH_GBS else ""))
    return ", ".join(out) or "-"


def main():
    global PACKET, PACKET_CALL
    parser = argparse.ArgumentParser(description="Time %s with the inputs the trace recorded." % OP)
    parser.add_argument("--device", default=DEVICE, help="where to run it (default: the trace's, %(default)s)")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds of timing per variant (default %(default)s)")
    opts = parser.parse_args()
    if opts.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("repro: the op ran on %s in the trace and this machine has no CUDA; try --device cpu" % DEVICE)
    apply_settings()
    torch.manual_seed(0)
    PACKET = resolve()
    args = inputs(opts.device)
    PACKET_CALL = call = bind(PACKET, args)
    dtype = args[0].dtype if args and isinstance(args[0], torch.Tensor) else None
    print("%s on %s, torch %s, %d threads" % (OP, opts.device, torch.__version__, torch.get_num_threads()))
    print("trace: %s per call (%s time, mean of %d calls)" % (fmt_time(TRACE_US / 1e6), TRACE_TIME_KIND, CALLS))
    base = median_seconds(lambda: call(args), opts.device, opts.min_time)
    peak_key = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp64"}.get(dtype, "")
    if peak_key == "fp32" and opts.device.startswith("cuda") and FLOPS and tf32_on():
        peak_key = "tf32"
    results = {"as recorded": base}
    print("%-14s %12s  %8s  %s" % ("variant", "median", "vs trace", "achieved"))
    print("%-14s %12s  %7.2fx  %s" % ("as recorded", fmt_time(base), base * 1e6 / TRACE_US, rates(base, peak_key)))
    if not FLOPS:
        print("(achieved: bottleneck counts FLOPs and bytes of matmul, convolution and attention only)")
    if not VARIANTS:
        print("(no variants for this op: channels_last, TF32 and autocast are for convolution, matmul and attention)")
    for name in VARIANTS:
        fn, why = variant(name, args, opts.device)
        if fn is None:
            print("%-14s skipped: %s" % (name, why))
            continue
        t = median_seconds(fn, opts.device, opts.min_time)
        results[name] = t
        key = {"tf32": "tf32", "autocast_bf16": "bf16", "autocast_fp16": "fp16"}.get(name, peak_key)
        print("%-14s %12s  %7.2fx  %s  (%.2fx faster than as recorded)" % (name, fmt_time(t), t * 1e6 / TRACE_US, rates(t, key, not name.startswith("autocast")), base / t))
    print("repro-result: " + json.dumps({"op": OP, "device": opts.device, "trace_us": TRACE_US,
                                         "median_us": {k: v * 1e6 for k, v in results.items()}}))


if __name__ == "__main__":
    main()
