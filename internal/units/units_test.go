package units

import "testing"

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		us   float64
		want string
	}{
		{0, "0"},
		{0.42, "0.42 µs"},
		{8.5, "8.50 µs"},
		{9.996, "10.0 µs"},
		{85.3, "85.3 µs"},
		{850, "850 µs"},
		{999.4, "999 µs"},
		{999.7, "1.00 ms"},
		{1500, "1.50 ms"},
		{12345, "12.3 ms"},
		{123456, "123 ms"},
		{2.35e6, "2.35 s"},
		{4567e6, "4567 s"},
		{-1500, "-1.50 ms"},
	} {
		if got := Duration(c.us); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.us, got, c.want)
		}
	}
	if got := Seconds(0.0123); got != "12.3 ms" {
		t.Errorf("Seconds(0.0123) = %q", got)
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    float64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.00 KiB"},
		{1536, "1.50 KiB"},
		{1023.8 * 1024, "1.00 MiB"},
		{12.3 * (1 << 20), "12.3 MiB"},
		{1.07 * (1 << 30), "1.07 GiB"},
		{-2048, "-2.00 KiB"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestThings(t *testing.T) {
	for n, want := range map[int]string{0: "0 threads", 1: "1 thread", 2: "2 threads", 1024: "1,024 threads"} {
		if got := Things(n, "thread"); got != want {
			t.Errorf("Things(%d) = %q, want %q", n, got, want)
		}
	}
}
