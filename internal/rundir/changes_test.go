package rundir

import "testing"

func TestParseChange(t *testing.T) {
	for in, want := range map[string]string{
		"num_workers=4": "num_workers=4", "num_workers=0": "num_workers=0", "pin_memory=1": "pin_memory=true",
		"gc_freeze=TRUE": "gc_freeze=true", "threads=2": "threads=2",
		"threads=0": "", "threads=-1": "", "workers=4": "", "num_workers": "", "=4": "", "pin_memory=yes": "", "num_workers=four": "",
		// the model changes take frozen (the models called with gradients off), the others not
		"bf16_autocast=Frozen": "bf16_autocast=frozen", "channels_last=frozen": "channels_last=frozen", "tf32=frozen": "",
	} {
		n, v, err := ParseChange(in)
		if got := n + "=" + v; err == nil && got != want || err != nil && want != "" {
			t.Errorf("%s: %s, %v; want %q", in, got, err, want)
		}
	}
}
