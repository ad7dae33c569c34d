package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A change gets the program's own option that makes it: timm's
// --amp --amp-dtype bfloat16, --channels-last and --workers, the Hugging
// Face scripts' --bf16 and --torch_compile, and for CUDA graphs the
// compile option with its mode; a --no- switch, an --amp
// without a bfloat16 dtype, a change no option makes and a run without
// options stay as they are.
func TestProgramOptions(t *testing.T) {
	sw := func(flag, dest string, sets any) rundir.ProgramOption {
		return rundir.ProgramOption{Flags: []string{flag}, Dest: dest, Kind: "switch", Sets: sets, Value: false}
	}
	val := func(dest string, choices []any, flags ...string) rundir.ProgramOption {
		return rundir.ProgramOption{Flags: flags, Dest: dest, Kind: "value", Choices: choices}
	}
	timm := []rundir.ProgramOption{sw("--amp", "amp", true), val("amp_dtype", nil, "--amp-dtype"), sw("--channels-last", "channels_last", true),
		val("workers", nil, "-j", "--workers"), sw("--no-prefetcher", "prefetcher", false)}
	// HfArgumentParser's bools take a value or none (nargs="?", const=True)
	bare := func(flag, dest string) rundir.ProgramOption {
		return rundir.ProgramOption{Flags: []string{flag, strings.ReplaceAll(flag, "_", "-")}, Dest: dest, Kind: "value", Sets: true, Value: false}
	}
	lightning := []rundir.ProgramOption{val("trainer.precision", nil, "--trainer.precision"), val("data.num_workers", nil, "--data.num_workers"), val("model.width", nil, "--model.width")}
	hf := []rundir.ProgramOption{bare("--bf16", "bf16"), bare("--torch_compile", "torch_compile"), val("dataloader_num_workers", nil, "--dataloader_num_workers")}
	const (
		bf16   = "bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) with the model in channels_last (model.to(memory_format=torch.channels_last))"
		comp   = "torch.compile(model) fuses its small ops"
		tf32   = "run the fp32 matmuls on tensor cores in TF32: torch.set_float32_matmul_precision(\"high\")"
		graphs = "torch.compile(model, mode=\"reduce-overhead\") captures the step's kernels in a CUDA graph"
		loader = "DataLoader(num_workers=2, persistent_workers=True) loads them in background workers"
	)
	for _, c := range []struct {
		name    string
		opts    []rundir.ProgramOption
		change  string
		wantOpt string // "" the change as it was
	}{
		{"timm bf16 and layout", timm, bf16, "--amp --amp-dtype bfloat16, --channels-last"},
		// strided depthwise convolutions: channels_last, bf16 left off
		{"timm layout, bf16 off", timm, "put the model and its input in channels_last (model.to(memory_format=torch.channels_last)); " + depthwiseNoBF16, "--channels-last"},
		{"timm workers", timm, loader, "--workers N"},
		{"timm compile", append(timm, rundir.ProgramOption{Flags: []string{"--torchcompile"}, Dest: "torchcompile", Kind: "value", Sets: "inductor"}), comp, "--torchcompile"},
		{"a compile option that takes a value", []rundir.ProgramOption{val("torchcompile", nil, "--torchcompile")}, comp, ""},
		{"hf bf16", hf, bf16, "--bf16"},
		{"hf compile", hf, comp, "--torch_compile"},
		{"hf tf32", append(hf, rundir.ProgramOption{Flags: []string{"--tf32"}, Dest: "tf32", Kind: "value"}), tf32, "--tf32 True"},
		{"a tf32 switch", []rundir.ProgramOption{sw("--tf32", "tf32", true)}, tf32, "--tf32"},
		{"tf32 already asked for", []rundir.ProgramOption{{Flags: []string{"--tf32"}, Dest: "tf32", Kind: "value", Value: true}}, tf32, ""},
		// run_glue.py's --pad_to_max_length (True by default)
		{"hf padding", append(hf, rundir.ProgramOption{Flags: []string{"--pad_to_max_length"}, Dest: "pad_to_max_length", Kind: "value", Value: true}),
			paddingChange + ", not to a fixed length", "--pad_to_max_length False"},
		{"padding already dynamic", []rundir.ProgramOption{{Flags: []string{"--pad_to_max_length"}, Dest: "pad_to_max_length", Kind: "value", Value: false}}, paddingChange, ""},
		{"hf workers", hf, loader, "--dataloader_num_workers N"},
		// workers kept across epochs: the Trainer's bool, or a switch
		{"hf persistent workers", append(hf, bare("--dataloader_persistent_workers", "dataloader_persistent_workers")), "the DataLoader starts and stops its 2 worker processes for each of its 6 epochs: TrainingArguments(dataloader_persistent_workers=True)", "--dataloader_persistent_workers True"},
		{"a persistent workers switch", []rundir.ProgramOption{sw("--persistent-workers", "persistent_workers", true)}, "DataLoader(..., persistent_workers=True)", "--persistent-workers"},
		{"a --no- switch", []rundir.ProgramOption{sw("--no-compile", "compile", false)}, comp, ""},
		// CUDA graphs need the program's compile mode too
		{"hf graphs", append(hf, val("torch_compile_mode", nil, "--torch_compile_mode")), graphs, "--torch_compile --torch_compile_mode reduce-overhead"},
		{"timm graphs", append(timm, rundir.ProgramOption{Flags: []string{"--torchcompile"}, Dest: "torchcompile", Kind: "value", Sets: "inductor"}, val("torchcompile_mode", nil, "--torchcompile-mode")), graphs, "--torchcompile --torchcompile-mode reduce-overhead"},
		{"graphs without a mode option", hf, graphs, ""},
		{"a mode option without reduce-overhead", append(hf, val("torch_compile_mode", []any{"default", "max-autotune"}, "--torch_compile_mode")), graphs, ""},
		{"amp without a dtype", []rundir.ProgramOption{sw("--amp", "amp", true)}, bf16, ""},
		{"a dtype without bfloat16", []rundir.ProgramOption{sw("--amp", "amp", true), val("amp_dtype", []any{"float16"}, "--amp-dtype")}, bf16, ""},
		{"a precision choice", []rundir.ProgramOption{val("precision", []any{"32", "bf16-mixed"}, "--precision")}, bf16, "--precision bf16-mixed"},
		// LightningCLI: jsonargparse's dotted options, no choices listed
		{"lightning bf16", lightning, bf16, "--trainer.precision bf16-mixed"},
		{"lightning workers", lightning, loader, "--data.num_workers N"},
		{"a dotted option of another name", []rundir.ProgramOption{val("model.num_workers_hint", nil, "--model.num_workers_hint")}, loader, ""},
		{"no options", nil, bf16, ""},
		{"workers already none", timm, "DataLoader(num_workers=0) loads them in the main thread", ""},
	} {
		s := &state{d: &Diagnosis{Findings: []Finding{{Change: "first", Alternatives: []Alternative{{Kind: "or", Change: c.change}}}}},
			in: Analyses{Run: &runevidence.RunEvidence{Options: c.opts}}}
		s.programOptions()
		got := s.d.Findings[0].Alternatives[0].Change
		want := c.change
		if c.wantOpt != "" {
			want += " (this program's own option: " + c.wantOpt + ")"
		}
		if got != want || s.d.Findings[0].Change != "first" {
			t.Errorf("%s: %q, want %q", c.name, got, want)
		}
	}
}

// The first change that the program's options make, and the agent cannot,
// is offered to run --verify as those options' arguments: bf16 and TF32
// as numerics changes, compiling with its warm-up steps; not a number to
// choose (workers), not where the agent makes the change itself, unless
// the options make every model change the agent would (timm's --amp
// autocasts its loss too).
func TestOptionTry(t *testing.T) {
	timm := []rundir.ProgramOption{{Flags: []string{"--amp"}, Dest: "amp", Kind: "switch", Sets: true}, {Flags: []string{"--amp-dtype"}, Dest: "amp_dtype", Kind: "value"},
		{Flags: []string{"--channels-last"}, Dest: "channels_last", Kind: "switch", Sets: true}, {Flags: []string{"--torchcompile"}, Dest: "torchcompile", Kind: "value", Sets: "inductor"},
		{Flags: []string{"-j", "--workers"}, Dest: "workers", Kind: "value"}}
	for _, c := range []struct {
		name, change string
		try          map[string]string
		want         *OptionTry
	}{
		{"bf16 and layout", "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16)); with channels_last for convolutions", nil,
			&OptionTry{Args: []string{"--amp", "--amp-dtype", "bfloat16", "--channels-last"}, Numerics: true}},
		{"compile", "torch.compile(model) fuses chains of them", nil, &OptionTry{Args: []string{"--torchcompile"}, WarmupSteps: compileWarmup}},
		{"workers", "DataLoader(num_workers=8)", nil, nil},
		{"the agent makes it", "torch.compile(model) fuses chains of them", map[string]string{"threads": "2"}, nil},
		{"the options make the agent's model changes", "bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) with the model in channels_last", map[string]string{"bf16_autocast": "true", "channels_last": "true"},
			&OptionTry{Args: []string{"--amp", "--amp-dtype", "bfloat16", "--channels-last"}, Numerics: true}},
		{"the options make one of two", "bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) with the model in channels_last", map[string]string{"bf16_autocast": "true", "channels_last": "true", "threads": "2"}, nil},
		{"no option", "accumulate on the device", nil, nil},
	} {
		s := &state{d: &Diagnosis{Findings: []Finding{{Change: c.change, Try: c.try}}}, in: Analyses{Run: &runevidence.RunEvidence{Options: timm}}}
		s.programOptions()
		got := s.d.Findings[0].TryOption
		if (got == nil) != (c.want == nil) || got != nil && (!slices.Equal(got.Args, c.want.Args) || got.Numerics != c.want.Numerics || got.WarmupSteps != c.want.WarmupSteps) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if try := s.d.Findings[0].Try; c.try != nil && (got != nil) == (len(try) > 0) {
			t.Errorf("%s: try %v beside the options' %+v: want exactly one of them", c.name, try, got)
		}
	}
}
