package monitoring_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// loadSeries builds an in-memory storage from series in promtool's and
// promqltest's notation, one a line ("up{job=\"x\"} 1x5 0x10": values one
// interval apart from time 0; "_" for none). It stands in for promqltest's
// storage, a real TSDB whose package pulls in Prometheus's remote-write
// clients (the AWS and Azure SDKs): three times the code to compile for
// what a few float series need.
func loadSeries(text string, interval time.Duration) (storage.Queryable, error) {
	var all []storage.Series
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		lset, values, err := promParser.ParseSeriesDesc(line)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", line, err)
		}
		var samples []chunks.Sample
		for i, v := range values {
			if v.Omitted {
				continue
			}
			if v.Histogram != nil {
				return nil, fmt.Errorf("series %q: native histograms are not supported here", line)
			}
			samples = append(samples, floatSample{t: int64(i) * interval.Milliseconds(), f: v.Value})
		}
		all = append(all, storage.NewListSeries(lset, samples))
	}
	slices.SortFunc(all, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
			for _, s := range all {
				if matchAll(s.Labels(), ms) {
					out = append(out, s)
				}
			}
			return &seriesSlice{series: out, i: -1}
		},
	}}, nil
}

func matchAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

// floatSample is one float sample of a loaded series.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }

// seriesSlice is a storage.SeriesSet over series sorted by labels.
type seriesSlice struct {
	series []storage.Series
	i      int
}

func (s *seriesSlice) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSlice) At() storage.Series                { return s.series[s.i] }
func (s *seriesSlice) Err() error                        { return nil }
func (s *seriesSlice) Warnings() annotations.Annotations { return nil }
