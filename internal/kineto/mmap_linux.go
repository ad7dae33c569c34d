package kineto

import (
	"os"
	"syscall"
)

// mapFile maps the size bytes of f read-only, its pages filled in at once
// (MAP_POPULATE: one call instead of a fault every few pages), or returns
// nil when it cannot. Against reading it into buffers, real traces of
// 1-15 MB took 0.79-0.99x the CPU (the copy and the buffers' first touch
// saved; docs/performance.md, "Small traces").
func mapFile(f *os.File, size int64) []byte {
	if size <= 0 || size != int64(int(size)) {
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return nil
	}
	return b
}

func unmapFile(b []byte) { _ = syscall.Munmap(b) }
