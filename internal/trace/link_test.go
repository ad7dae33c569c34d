package trace

import (
	"fmt"
	"testing"
)

// Correlation and External ids are looked up in a slice when dense and in
// a map when sparse; both must link the same way.
func TestLinkDenseAndSparseIDs(t *testing.T) {
	for _, ids := range [][2]int64{{7, 8}, {7, 1 << 40}, {-5, 1 << 62}} {
		tr := New("x")
		host := tr.TrackFor(TrackKey{Pid: 1, Tid: 1}, map[TrackKey]TrackID{})
		dev := tr.TrackFor(TrackKey{Pid: 0, Tid: 7}, map[TrackKey]TrackID{})
		tr.Tracks[dev].Device, tr.Tracks[dev].Stream = 0, 7
		op := tr.AddEvent(&EventRecord{Kind: KindCPUOp, Track: host, Start: 0, Dur: 100, ExternalID: ids[0], SeqNum: -1})
		var launches, kernels []int
		for i, id := range ids {
			launches = append(launches, tr.AddEvent(&EventRecord{Kind: KindRuntime, Track: host, Start: int64(10 + 20*i), Dur: 5, ExternalID: ids[0], Correlation: id, SeqNum: -1}))
			kernels = append(kernels, tr.AddEvent(&EventRecord{Kind: KindKernel, Track: dev, Start: int64(50 + 20*i), Dur: 10, Correlation: id, SeqNum: -1}))
		}
		tr.Link()
		for i := range ids {
			if got := tr.Events.Launch(kernels[i]); got != int32(launches[i]) {
				t.Errorf("ids %v: kernel %d launched by %d, want %d", ids, i, got, launches[i])
			}
			if got := tr.Events.Op(kernels[i]); got != int32(op) {
				t.Errorf("ids %v: kernel %d has op %d, want %d", ids, i, got, op)
			}
		}
	}
}

// Append maps a later part's ids onto the trace's own.
func TestAppend(t *testing.T) {
	a, b := New("x"), New("x")
	ia, ib := map[TrackKey]TrackID{}, map[TrackKey]TrackID{}
	ta := a.TrackFor(TrackKey{Pid: 1, Tid: 1}, ia)
	aArgs, aVals := a.InternArgs([]Arg{{Key: KeyBytes, Val: IntValue(7)}})
	a.AddEvent(&EventRecord{Kind: KindCPUOp, Name: a.InternString("first"), Track: ta, Dur: 1, Args: aArgs, ArgVals: aVals, SeqNum: -1})
	a.Problems.Add(3, "invalid escape", "")

	b.InternString("only in b")
	tb2 := b.TrackFor(TrackKey{Pid: 0, Tid: 7, TidLabel: b.InternString("stream 7")}, ib)
	b.Tracks[tb2].Device, b.Tracks[tb2].Stream = 0, 7
	tb1 := b.TrackFor(TrackKey{Pid: 1, Tid: 1}, ib)
	args, _ := b.InternArgs([]Arg{{Key: b.InternString("note"), Val: StrValue(b.InternString("hello"))}})
	b.AddEvent(&EventRecord{Kind: KindCPUOp, Name: b.InternString("second"), Track: tb1, Start: 5, Dur: 1, Args: args, SeqNum: -1})
	grid, _ := Dim3Value(80, 1, 2)
	kArgs, kVals := b.InternArgs([]Arg{{Key: KeyGrid, Val: grid}, {Key: KeyRegisters, Val: IntValue(32)}, {Key: KeyOccupancy, Val: FloatValue(12.5)}})
	k := b.AddEvent(&EventRecord{Kind: KindKernel, Name: b.InternString("gemm"), Track: tb2, Start: 6, Dur: 1, Args: kArgs, ArgVals: kVals, SeqNum: -1})
	b.Memory = append(b.Memory, MemoryRecord{Event: int32(k), Bytes: 64})
	b.Flows = append(b.Flows, Flow{ID: 1, Cat: b.InternString("ac2g"), Phase: 's', Track: tb2})
	b.Problems.Add(9, "invalid escape", "")
	b.Problems.Add(10, "quoted number", "ts")

	a.AppendTables(b, ia).CopyEvents()
	if len(a.Tracks) != 2 || a.Tracks[1].TidLabel != "stream 7" || a.Tracks[1].Stream != 7 {
		t.Fatalf("tracks %+v", a.Tracks)
	}
	if a.Events.Len() != 3 || a.Name(1) != "second" || a.Events.Track[1] != ta || a.Name(2) != "gemm" || a.Events.Track[2] != 1 {
		t.Fatalf("events not mapped: %d, %q track %d, %q track %d", a.Events.Len(), a.Name(1), a.Events.Track[1], a.Name(2), a.Events.Track[2])
	}
	if s, ok := a.ArgStr(1, mustLookup(t, a, "note")); !ok || s != "hello" {
		t.Errorf("args not mapped: %q %v", s, ok)
	}
	if n, ok := a.ArgInt(0, KeyBytes); !ok || n != 7 {
		t.Errorf("first trace's per-launch value: %d %v", n, ok)
	}
	var got []string
	for _, arg := range a.Args(2) {
		got = append(got, a.Str(arg.Key)+"="+a.Format(arg.Val))
	}
	if want := "[grid=[80, 1, 2] registers per thread=32 est. achieved occupancy %=12.5]"; fmt.Sprint(got) != want {
		t.Errorf("appended per-launch values: %s, want %s", got, want)
	}
	if a.Memory[0].Event != 2 || a.Str(a.Flows[0].Cat) != "ac2g" || a.Flows[0].Track != 1 {
		t.Errorf("memory %+v flows %+v", a.Memory, a.Flows)
	}
	if len(a.Problems.List) != 2 || a.Problems.List[0].Count != 2 || a.Problems.List[0].Offset != 3 {
		t.Errorf("problems %+v", a.Problems.List)
	}
}

func mustLookup(t *testing.T, tr *Trace, s string) StrID {
	id, ok := tr.Lookup(s)
	if !ok {
		t.Fatalf("%q not interned", s)
	}
	return id
}

// An External id that an op of another thread also carries must not link
// a runtime call to that op: the launching op is on the call's thread.
func TestExternalIDStaysOnItsThread(t *testing.T) {
	tr := New("x")
	keys := map[TrackKey]TrackID{}
	main := tr.TrackFor(TrackKey{Pid: 1, Tid: 1}, keys)
	bwd := tr.TrackFor(TrackKey{Pid: 1, Tid: 2}, keys)
	other := tr.AddEvent(&EventRecord{Kind: KindCPUOp, Track: bwd, Start: 0, Dur: 100, ExternalID: 9, SeqNum: -1})
	own := tr.AddEvent(&EventRecord{Kind: KindCPUOp, Track: main, Start: 0, Dur: 100, ExternalID: 3, SeqNum: -1})
	call := tr.AddEvent(&EventRecord{Kind: KindRuntime, Track: main, Start: 10, Dur: 5, ExternalID: 9, SeqNum: -1})
	tr.Link()
	if got := tr.Events.Op(call); got != int32(own) {
		t.Errorf("call linked to op %d, want its own thread's op %d (not %d on another thread)", got, own, other)
	}
}
