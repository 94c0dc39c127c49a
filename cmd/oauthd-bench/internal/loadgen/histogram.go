package loadgen

import (
	"math/bits"
	"time"
)

// Histogram is a log-linear latency histogram in microseconds: 32
// sub-buckets per power of two, so a quantile is within about 3% (it
// reports the upper bound of its bucket, never above the largest sample).
// The zero value is empty and ready; it is not safe for concurrent use:
// each worker keeps its own and they are merged at the end.
type Histogram struct {
	counts [64 * 32]uint64
	n      uint64
	maxUS  uint64
}

// Add records one sample.
func (h *Histogram) Add(d time.Duration) {
	us := uint64(max(d.Microseconds(), 0))
	h.counts[bucketOf(us)]++
	h.n++
	h.maxUS = max(h.maxUS, us)
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

func bucketOf(us uint64) int {
	if us < 32 {
		return int(us)
	}
	e := bits.Len64(us) - 6 // us >> e is in [32, 64)
	return (e+1)*32 + int(us>>e) - 32
}

// upper is the largest value of bucket i, in microseconds.
func upper(i int) uint64 {
	if i < 32 {
		return uint64(i)
	}
	e := i/32 - 1
	m := uint64(i%32 + 32)
	return (m+1)<<e - 1
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.maxUS = max(h.maxUS, o.maxUS)
}

// Quantile returns the q-quantile in milliseconds (0 without samples).
func (h *Histogram) Quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(min(upper(i), h.maxUS)) / 1000
		}
	}
	return h.Max()
}

// Max is the largest sample in milliseconds.
func (h *Histogram) Max() float64 { return float64(h.maxUS) / 1000 }

// Latency is h's summary in milliseconds.
func (h *Histogram) Latency() LatencyMS {
	return LatencyMS{P50: h.Quantile(0.50), P90: h.Quantile(0.90), P99: h.Quantile(0.99), Max: h.Max()}
}

// LatencyMS is a latency summary in milliseconds.
type LatencyMS struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}
