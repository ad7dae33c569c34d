//go:build !linux

package kineto

import "os"

// mapFile maps files on Linux only (mmap_linux.go); elsewhere they are read.
func mapFile(*os.File, int64) []byte { return nil }

func unmapFile([]byte) {}
