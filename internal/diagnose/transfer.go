package diagnose

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "sync.blocking", Class: Sync, Factor: 1.0,
	When: ">= SyncPerStep blocking syncs per step; at stake: the device idle each sync causes, min(device busy during the call, device idle after it until the next device work), summed over the steps used",
	Change: orTry("remove .item() / .cpu() / .tolist() / print(tensor) from the loop: keep values on the device and read them every N steps",
		"avoid data-dependent shapes (nonzero, boolean masks): each waits for the device to know its size"),
	detect: (*state).syncFinding,
	Fires:  "driver.TestVerdictCorpus/synthetic_item_sync", Silent: "driver.TestVerdictCorpus/synthetic_final_sync_only",
})

// syncFinding: sync.blocking.
func (s *state) syncFinding() {
	if !s.big(Sync) {
		return
	}
	var where []Location
	if r := s.in.Run; r != nil {
		for i, ss := range r.SyncSites {
			if i == 3 {
				break
			}
			where = append(where, Location{Kind: "sync-site", Name: ss.Func, File: ss.File, Line: ss.Line, Note: fmt.Sprintf("%d implicit syncs in the window", ss.Count)})
		}
	}
	if sy := s.in.Syncs; sy != nil {
		for _, c := range sy.Causes {
			if len(where) == 3 || c.StallUs <= 0 {
				break
			}
			name := cmp.Or(c.Op, c.TopOp, c.Call)
			call := c.Call
			if c.Copy != "" {
				call += " " + c.Copy + " pageable"
			}
			l := Location{Kind: "op", Name: name, Note: fmt.Sprintf("%d × %s, %s blocked, device stalled %s", c.Count, call, units.Duration(c.BlockedUs), units.Duration(c.StallUs))}
			if len(c.Stack) > 0 {
				l.Note += "; stack: " + c.Stack[0]
			}
			where = append(where, l)
		}
	}
	s.emit(s.finding("sync.blocking", fmt.Sprintf("%.0f blocking syncs per step stall the device", s.syncPS), s.at(Sync), s.ev[Sync], where, s.syncChange()))
}

var _ = addRule(Rule{
	ID: "copy.h2d", Class: Copy, Factor: 0.5,
	When: "memcpy/memset not overlapped with kernels >= MinFinding of the step",
	Change: orTry("copy from pinned memory asynchronously: DataLoader(pin_memory=True) or tensor.pin_memory(), then .to(device, non_blocking=True)",
		"keep reused data on the device: it is then copied once"),
	detect: (*state).copyFinding,
	Fires:  "TestCopyFinding", Silent: "TestCopyFinding",
})

// copyFinding: copy.h2d.
func (s *state) copyFinding() {
	if !s.big(Copy) {
		return
	}
	where, pageable, dtod := s.copies()
	title := fmt.Sprintf("Host-device copies take %.0f%% of the step", s.findingPct(s.share[Copy]))
	change := ""
	switch {
	case dtod:
		// copies within the device: pinned memory is not the answer
		title = fmt.Sprintf("Copies not overlapped with kernels take %.0f%% of the step, most of the copy time device-to-device", s.findingPct(s.share[Copy]))
		change = "the copies stay on the device: find the ops that issue them (copy_, contiguous, clone, cat, index_put) and avoid them with views, in-place ops or the layout the next op wants; torch.compile removes many"
		where = append(where, s.topOps(2, false, "aten::copy_", "contiguous", "clone", "aten::cat")...)
	case !pageable:
		change = orTry("the copies already come from pinned memory: overlap them with compute on a side stream (non_blocking=True)", "keep the data on the device: it is then copied once")
	case s.py != nil:
		// a copy from pageable memory holds the host until it is done:
		// the line that issues it is where the window's samples sit
		where = append(s.pyLines(slices.DeleteFunc(slices.Clone(s.py.Hot), func(l runevidence.Line) bool { return l.Pct < 25 }), 2), where...)
	}
	s.emit(s.finding("copy.h2d", title, s.at(Copy), s.ev[Copy], where, change))
}
