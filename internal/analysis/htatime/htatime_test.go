package htatime

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// USFloat must give what a JSON parser gives for the µs text of ns.
func TestUSFloat(t *testing.T) {
	cases := []int64{0, 1, 999, 1000, 1 << 53, 1<<53 + 1, 1712195495506290120, 1712195495506290125,
		1712195495506290375, 4458676859077781, math.MaxInt64, math.MaxInt64 - 500, -1712195495506290125}
	rng := rand.New(rand.NewSource(1))
	for range 200000 {
		// Epoch-µs timestamps in ns, around every power of two above 2^53.
		cases = append(cases, rng.Int63n(1<<62), 1<<(53+rng.Intn(10))+rng.Int63n(1<<20)-1<<19,
			rng.Int63n(1<<53))
	}
	for _, ns := range cases {
		neg, a := "", ns
		if ns < 0 {
			neg, a = "-", -ns
		}
		want, err := strconv.ParseFloat(fmt.Sprintf("%s%d.%03d", neg, a/1000, a%1000), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := USFloat(ns); got != want {
			t.Fatalf("USFloat(%d) = %v, want %v", ns, got, want)
		}
	}
}
