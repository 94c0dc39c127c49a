package bolt

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the store's metrics: the group committer's counters (the
// mean batch is ops/commits, the mean commit latency seconds/commits).
func (s *Store) Collectors() []prometheus.Collector {
	counter := func(name, help string, f func(CommitStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return f(s.CommitStats()) })
	}
	return []prometheus.Collector{
		counter("oauthd_store_commits_total", "Batches of writes run by the group committer.",
			func(s CommitStats) float64 { return float64(s.Commits) }),
		counter("oauthd_store_committed_writes_total", "Writes carried by those batches.",
			func(s CommitStats) float64 { return float64(s.Ops) }),
		counter("oauthd_store_commit_seconds_total", "Time from the start of those batches to their answers, fsyncs included.",
			func(s CommitStats) float64 { return s.Time.Seconds() }),
		counter("oauthd_store_wal_syncs_total", "fdatasyncs of the write-ahead log.",
			func(s CommitStats) float64 { return float64(s.Syncs) }),
		counter("oauthd_store_wal_sync_seconds_total", "Time spent in them.",
			func(s CommitStats) float64 { return s.SyncTime.Seconds() }),
		counter("oauthd_store_checkpoints_total", "Copies of the write-ahead log into the database file.",
			func(s CommitStats) float64 { return float64(s.Checkpoints) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "oauthd_store_free_pages",
			Help: "Free pages of the bbolt file, which bbolt keeps in memory as its free list (about 60 bytes each); `oauthd store compact` returns them."},
			func() float64 { return float64(s.FreePages()) }),
		counter("oauthd_store_checkpoint_seconds_total", "Time spent in them; the group committer answers no write meanwhile.",
			func(s CommitStats) float64 { return s.CheckpointTime.Seconds() }),
	}
}
