package kineto

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func TestZZStats(t *testing.T) {
	path := os.Getenv("ZZ_TRACE")
	if path == "" {
		t.Skip()
	}
	tr, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("events %d strings %d argsets %d heap %d MB file %d MB", tr.Events.Len(), len(tr.Strings), tr.ArgSets.Len(), ms.HeapAlloc>>20, tr.BytesRead>>20)
	f, _ := os.Create("/tmp/p16/zz.heap")
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(tr)
}
