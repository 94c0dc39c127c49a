package loadgen

import (
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for us := 1; us <= 10000; us++ {
		h.Add(time.Duration(us) * time.Microsecond)
	}
	for _, tc := range []struct{ q, want float64 }{{0.5, 5}, {0.9, 9}, {0.99, 9.9}} {
		got := h.Quantile(tc.q)
		if got < tc.want*0.99 || got > tc.want*1.04 {
			t.Errorf("Quantile(%v) = %v ms; want %v within 4%%", tc.q, got, tc.want)
		}
	}
	if got, want := h.Max(), 10.0; got != want {
		t.Errorf("Max() = %v; want %v", got, want)
	}
	if got, want := h.Count(), uint64(10000); got != want {
		t.Errorf("Count() = %d; want %d", got, want)
	}
	var empty Histogram
	if got := empty.Latency(); got != (LatencyMS{}) {
		t.Errorf("empty Latency() = %+v; want zeros", got)
	}
}

// TestHistogramExactBelow32us: below 32 µs every microsecond has its own
// bucket, so quantiles of small samples are exact.
func TestHistogramExactBelow32us(t *testing.T) {
	var h Histogram
	for _, us := range []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3} { // sorted: 1 1 2 3 3 4 5 5 6 9
		h.Add(time.Duration(us) * time.Microsecond)
	}
	got := h.Latency()
	want := LatencyMS{P50: 0.003, P90: 0.006, P99: 0.009, Max: 0.009}
	if got != want {
		t.Errorf("Latency() = %+v; want %+v", got, want)
	}
}

// TestHistogramQuantileNeverAboveMax: a bucket's upper bound is capped
// at the largest sample.
func TestHistogramQuantileNeverAboveMax(t *testing.T) {
	var h Histogram
	h.Add(1000 * time.Microsecond) // bucket [992, 1023]
	if got, want := h.Quantile(0.99), 1.0; got != want {
		t.Errorf("Quantile(0.99) = %v; want %v (the sample itself)", got, want)
	}
}

func TestHistogramMerge(t *testing.T) {
	var all, a, b Histogram
	for us := 1; us <= 5000; us++ {
		d := time.Duration(us*7) * time.Microsecond
		all.Add(d)
		if us%3 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	a.Merge(&b)
	if a != all {
		t.Errorf("merged %+v; want %+v", a.Latency(), all.Latency())
	}
}

func TestHistogramBuckets(t *testing.T) {
	for us := uint64(0); us < 1<<20; us += 7 {
		if i := bucketOf(us); upper(i) < us || (i > 0 && upper(i-1) >= us) {
			t.Fatalf("value %d in bucket %d [.., %d], previous ends at %d", us, i, upper(i), upper(i-1))
		}
	}
	if i := bucketOf(1<<63 + 5); i >= len(Histogram{}.counts) {
		t.Errorf("bucketOf(2^63+5) = %d; out of range", i)
	}
}
