/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // out of order: percentile sorts a copy
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(ds, tc.q); got != tc.want {
			t.Errorf("percentile(1..100 ms, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("percentile reordered its argument")
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
	if got := percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("percentile of one = %v, want 7", got)
	}
}

func TestSlopeIsTheLeastSquaresFit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"a line", []float64{0, 1, 2, 3}, []float64{5, 7, 9, 11}, 2},
		{"flat with noise around it", []float64{0, 1, 2, 3, 4}, []float64{10, 12, 8, 12, 8}, -0.4},
		{"one point", []float64{1}, []float64{3}, 0},
		{"every x the same", []float64{2, 2}, []float64{1, 3}, 0},
		{"uneven lengths", []float64{1, 2}, []float64{1}, 0},
	} {
		if got := slope(tc.xs, tc.ys); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: slope = %v, want %v", tc.name, got, tc.want)
		}
	}
}
