package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// WriteText renders the whole report: the verdict and top findings, what
// was read, then per trace the analyses (most telling first), then the
// tables.
func WriteText(w io.Writer, r *Report) error {
	w = textsafe.Writer(w)
	WriteVerdict(w, r)
	return WriteDetails(w, r)
}

// WriteVerdict writes the opening of the report: the verdict (across ranks
// when there are several) and the top findings, followed by a blank line.
func WriteVerdict(w io.Writer, r *Report) {
	w = textsafe.Writer(w)
	if r.Diagnosis != nil {
		WriteRunDiagnosis(w, r.Diagnosis)
		fmt.Fprintln(w)
	} else if len(r.Traces) == 1 && r.Traces[0].Diagnosis != nil {
		WriteDiagnosis(w, r.Traces[0].Diagnosis)
		fmt.Fprintln(w)
	}
}

// WriteDetails writes everything after the verdict.
func WriteDetails(w io.Writer, r *Report) error {
	w = textsafe.Writer(w)
	WriteInputs(w, r)
	if r.Ranks != nil {
		fmt.Fprintln(w)
		if err := WriteRanks(w, r.Ranks); err != nil {
			return err
		}
	}
	for _, tr := range r.Traces {
		if err := writeTrace(w, &tr, len(r.Traces) > 1); err != nil {
			return err
		}
	}
	return nil
}

func writeTrace(w io.Writer, tr *TraceReport, several bool) error {
	if several {
		fmt.Fprintf(w, "\n=== rank %d: %s\n", tr.Rank, textsafe.String(tr.Path))
		if tr.Diagnosis != nil {
			WriteDiagnosis(w, tr.Diagnosis)
		}
	}
	sections := []func() error{
		func() error {
			return optionalSection(tr.Breakdown != nil, func() error { return WriteBreakdown(w, tr.Breakdown) })
		},
		func() error { return optionalSection(tr.GPU != nil, func() error { return WriteGPU(w, tr.GPU) }) },
		func() error { return optionalSection(tr.Idle != nil, func() error { return WriteIdle(w, tr.Idle) }) },
		func() error {
			return optionalSection(tr.Launch != nil, func() error { return WriteLaunch(w, tr.Launch) })
		},
		func() error { return optionalSection(tr.Syncs != nil, func() error { return WriteSyncs(w, tr.Syncs) }) },
		func() error { return optionalSection(tr.Input != nil, func() error { return WriteInput(w, tr.Input) }) },
		func() error {
			return optionalSection(tr.Memory != nil, func() error { return WriteMemory(w, tr.Memory) })
		},
		func() error { return optionalSection(tr.Flops != nil, func() error { return WriteFlops(w, tr.Flops) }) },
		func() error {
			return optionalSection(tr.Regions != nil, func() error { return WriteRegions(w, tr.Regions) })
		},
		func() error {
			return optionalSection(tr.CritPath != nil, func() error { return WriteCritPath(w, tr.CritPath) })
		},
		func() error {
			d := tr.Diagnosis
			return optionalSection(d != nil && d.WhatIf != nil, func() error { return WriteWhatIf(w, d.WhatIf) })
		},
		func() error { WriteOps(w, tr.Ops); return nil },
		func() error { WriteKernels(w, tr.Kernels); return nil },
	}
	for _, s := range sections {
		fmt.Fprintln(w)
		if err := s(); err != nil {
			return err
		}
	}
	if len(tr.Errors) > 0 {
		fmt.Fprintln(w)
		keys := make([]string, 0, len(tr.Errors))
		for k := range tr.Errors {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "analysis %s not available: %s\n", k, tr.Errors[k])
		}
	}
	return nil
}

func optionalSection(present bool, write func() error) error {
	if !present {
		return nil
	}
	return write()
}
