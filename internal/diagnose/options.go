package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A training script often has its own option for a change a finding
// advises: timm's train.py --amp --amp-dtype bfloat16 and
// --channels-last, the Hugging Face example scripts' --bf16, --tf32 True
// and --torch_compile, -j/--workers in pytorch/examples. The change then
// names it, so that the reader runs the program with it rather than edit
// code the option already has (the agent records the options the program
// parsed with argparse: rundir.ProgramOption).

// knob is a change a program's option can make, told by the words of
// the change that advises it; numerics: the change alters the program's
// numbers (bf16, TF32), so run --verify tries it only with =numerics;
// warmup: the steps the change spends first (compiling), which a tried
// run's comparison leaves out; agent: the agent's run-time change that
// makes it too (rundir.ChangeKinds), which the program's own option
// replaces in run --verify: it is the program's way (timm's --amp
// autocasts its loss too).
type knob struct {
	says     func(change string) bool
	option   func(opts []rundir.ProgramOption) string
	numerics bool
	warmup   int
	agent    string
}

// OptionTry is the program's own options that make a finding's first
// change, for run --verify to append to its arguments.
type OptionTry struct {
	// Args are the arguments appended ("--amp", "--amp-dtype", "bfloat16").
	Args []string `json:"args"`
	// Numerics: the change alters the program's numbers (bf16 autocast, TF32).
	Numerics bool `json:"changes_numerics,omitempty"`
	// WarmupSteps are the tried run's first steps left out of the
	// comparison (torch.compile compiles in them).
	WarmupSteps int `json:"warmup_steps,omitempty"`
}

// compileWarmup: torch.compile compiles in the first step and, with
// CUDA graphs, warms up and records them in the next two.
const compileWarmup = 3

var knobs = []knob{
	{ // bf16 autocast
		says: func(c string) bool {
			return strings.Contains(c, "bf16 autocast") || strings.Contains(c, "torch.autocast(") && strings.Contains(c, "bfloat16")
		},
		option:   bf16Option,
		numerics: true,
		agent:    "bf16_autocast",
	},
	{ // TF32 tensor cores for fp32 matmuls
		says: func(c string) bool { return strings.Contains(c, `set_float32_matmul_precision("high")`) },
		option: func(opts []rundir.ProgramOption) string {
			if o := switchOption(opts, "tf32", "allow_tf32"); o != "" {
				return o
			}
			// the Hugging Face TrainingArguments' --tf32 takes a bool
			return boolOption(opts, true, "tf32")
		},
		numerics: true,
	},
	{ // channels_last
		says:   func(c string) bool { return strings.Contains(c, "channels_last") },
		option: func(opts []rundir.ProgramOption) string { return switchOption(opts, "channels_last") },
		agent:  "channels_last",
	},
	{ // torch.compile of the model, its default mode
		says: func(c string) bool {
			return (strings.Contains(c, "torch.compile(model") || strings.Contains(c, "torch.compile on ") || strings.Contains(c, "torch_compile=True")) &&
				!strings.Contains(c, reduceOverhead)
		},
		option: compileOption,
		warmup: compileWarmup,
	},
	{ // CUDA graphs through torch.compile: the program's compile option
		// alone compiles in its default mode, without them
		says: func(c string) bool { return strings.Contains(c, reduceOverhead) },
		option: func(opts []rundir.ProgramOption) string {
			on := compileOption(opts)
			mode, ok := findOption(opts, "value", "compile_mode", "torch_compile_mode", "torchcompile_mode")
			if on == "" || !ok || len(mode.Choices) > 0 && !slices.Contains(mode.Choices, any("reduce-overhead")) {
				return ""
			}
			return on + " " + flagOf(mode) + " reduce-overhead"
		},
		warmup: compileWarmup,
	},
	{ // batches padded to their own longest: the Hugging Face example
		// scripts' --pad_to_max_length (True by default in run_glue.py)
		says: func(c string) bool { return strings.Contains(c, paddingChange) },
		option: func(opts []rundir.ProgramOption) string {
			return boolOption(opts, false, "pad_to_max_length")
		},
	},
	{ // workers kept from one epoch to the next (the Hugging Face
		// TrainingArguments' --dataloader_persistent_workers takes a bool)
		says: func(c string) bool { return strings.Contains(c, "persistent_workers=True") },
		option: func(opts []rundir.ProgramOption) string {
			if o := switchOption(opts, "persistent_workers"); o != "" {
				return o
			}
			return boolOption(opts, true, "dataloader_persistent_workers", "persistent_workers")
		},
		agent: "persistent_workers",
	},
	{ // DataLoader workers
		says: func(c string) bool {
			return strings.Contains(c, "num_workers=") && !strings.Contains(c, "num_workers=0)")
		},
		option: func(opts []rundir.ProgramOption) string {
			if o, ok := findOption(opts, "value", "workers", "num_workers", "dataloader_num_workers", "n_workers", "j"); ok {
				return flagOf(o) + " N"
			}
			return ""
		},
	},
}

// boolOption is a value option of dest that takes a bool (HfArgumentParser's
// fields: --tf32 True), set to what the change wants: "--name True" or
// "--name False"; "" where the program has none, or its value is not
// unset or the other bool.
func boolOption(opts []rundir.ProgramOption, want bool, dests ...string) string {
	o, ok := findOption(opts, "value", dests...)
	if !ok || o.Value != nil && o.Value != !want {
		return ""
	}
	if want {
		return flagOf(o) + " True"
	}
	return flagOf(o) + " False"
}

// reduceOverhead is how a change asks for CUDA graphs through torch.compile.
const reduceOverhead = `mode="reduce-overhead"`

// compileOption is the option that compiles the model: a switch, or a
// value option given bare (timm's --torchcompile, whose bare value is the
// backend).
func compileOption(opts []rundir.ProgramOption) string {
	if o := switchOption(opts, "compile", "torch_compile", "torchcompile"); o != "" {
		return o
	}
	if o, ok := findOption(opts, "value", "compile", "torch_compile", "torchcompile"); ok && o.Sets != nil {
		return flagOf(o)
	}
	return ""
}

// programOptions adds to each change of each finding the program's own
// option that makes it, where the run recorded one, and, for a first
// change the agent cannot make at run time (no Try), the arguments that
// make it (TryOption).
func (s *state) programOptions() {
	if s.in.Run == nil || len(s.in.Run.Options) == 0 {
		return
	}
	opts := s.in.Run.Options
	// note names the options in change; covered are the agent's changes
	// they make
	note := func(change string) (_ string, _ *OptionTry, covered []string) {
		var names []string
		t := &OptionTry{}
		for _, k := range knobs {
			if !k.says(change) {
				continue
			}
			o := k.option(opts)
			if o == "" || slices.Contains(names, o) {
				continue
			}
			names = append(names, o)
			if k.agent != "" {
				covered = append(covered, k.agent)
			}
			args := strings.Fields(o)
			if t != nil && slices.Contains(args, "N") {
				t = nil // a number to choose (workers): the agent's Try makes it
			}
			if t != nil {
				t.Args = append(t.Args, args...)
				t.Numerics = t.Numerics || k.numerics
				t.WarmupSteps = max(t.WarmupSteps, k.warmup)
			}
		}
		if len(names) == 0 {
			return change, nil, nil
		}
		return fmt.Sprintf("%s (this program's own option: %s)", change, strings.Join(names, ", ")), t, covered
	}
	for i := range s.d.Findings {
		f := &s.d.Findings[i]
		var t *OptionTry
		var covered []string
		f.Change, t, covered = note(f.Change)
		ownWay := t != nil && len(f.Try) > 0 // the program's options make every change the agent would
		for name := range f.Try {
			ownWay = ownWay && slices.Contains(covered, name)
		}
		if ownWay {
			f.Try = nil
		}
		if len(f.Try) == 0 {
			f.TryOption = t
		}
		for j := range f.Alternatives {
			f.Alternatives[j].Change, _, _ = note(f.Alternatives[j].Change)
		}
	}
}

// bf16Option is the option that runs the model under bf16 autocast: a
// --bf16 switch, an --amp switch with a dtype option that takes
// bfloat16, or a precision option whose choices name bf16.
func bf16Option(opts []rundir.ProgramOption) string {
	if o, ok := findOption(opts, "switch", "bf16"); ok {
		return flagOf(o)
	}
	dtype, hasDtype := findOption(opts, "value", "amp_dtype", "autocast_dtype", "dtype")
	if hasDtype && len(dtype.Choices) > 0 && !slices.Contains(dtype.Choices, any("bfloat16")) {
		hasDtype = false
	}
	if amp, ok := findOption(opts, "switch", "amp", "use_amp", "autocast"); ok && hasDtype {
		return flagOf(amp) + " " + flagOf(dtype) + " bfloat16"
	}
	if p, ok := findOption(opts, "value", "trainer.precision"); ok {
		return flagOf(p) + " bf16-mixed" // LightningCLI: Lightning's Trainer(precision="bf16-mixed")
	}
	if p, ok := findOption(opts, "value", "precision", "mixed_precision"); ok {
		for _, c := range p.Choices {
			if s, _ := c.(string); strings.HasPrefix(s, "bf16") {
				return flagOf(p) + " " + s
			}
		}
	}
	return ""
}

// switchOption is the flag of a switch whose destination is one of dests.
func switchOption(opts []rundir.ProgramOption, dests ...string) string {
	if o, ok := findOption(opts, "switch", dests...); ok {
		return flagOf(o)
	}
	return ""
}

// findOption is the first option of kind whose destination, lower case
// with dashes as underscores, is one of dests, or ends with "." and one
// (LightningCLI's --data.num_workers for num_workers). A switch is a flag that
// turns the destination on: store_true (not --no-compile's store_false),
// or a value option given bare that sets true (the Hugging Face
// scripts' --bf16: nargs="?", const=True).
func findOption(opts []rundir.ProgramOption, kind string, dests ...string) (rundir.ProgramOption, bool) {
	for _, d := range dests {
		for _, o := range opts {
			dest := strings.ReplaceAll(strings.ToLower(o.Dest), "-", "_")
			if dest != d && !strings.HasSuffix(dest, "."+d) || len(o.Flags) == 0 {
				continue
			}
			if kind == "switch" && o.Sets == true || kind == "value" && o.Kind == "value" {
				return o, true
			}
		}
	}
	return rundir.ProgramOption{}, false
}

// flagOf is the option's longest flag (--workers over -j), as the program's
// users would type it.
func flagOf(o rundir.ProgramOption) string {
	best := ""
	for _, f := range o.Flags {
		if len(f) > len(best) {
			best = f
		}
	}
	return best
}
