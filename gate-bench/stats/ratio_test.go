package stats

import (
	"math"
	"testing"
)

func TestRatioOfMeansIsTheRatioOfTheMeans(t *testing.T) {
	t.Parallel()
	r := RatioOfMeans([]float64{80, 90, 100}, []float64{100, 100, 100, 100})
	if math.Abs(r.Of-0.9) > 1e-12 || r.Runs != 3 || r.Reference != 4 {
		t.Fatalf("got %+v, want Of 0.9 over 3 and 4 runs", r)
	}
	// Every resample of the runs has a mean between 80 and 100, and the
	// reference is constant: the interval lies inside [0.8, 1.0] around 0.9.
	if r.Low < 0.8 || r.High > 1.0 || r.Low > r.Of || r.High < r.Of || r.Low == r.High {
		t.Fatalf("interval %.3f–%.3f, want a proper interval inside 0.8–1.0 holding 0.9", r.Low, r.High)
	}
}

func TestRatioOfMeansWithoutScatterHasNoWidth(t *testing.T) {
	t.Parallel()
	r := RatioOfMeans([]float64{45, 45}, []float64{50, 50, 50})
	if r.Of != 0.9 || r.Low != 0.9 || r.High != 0.9 {
		t.Fatalf("got %+v, want 0.9 with an interval of no width", r)
	}
}

// More runs of the same scatter narrow the interval: the property the
// overhead table relies on when it says one run decides nothing.
func TestRatioOfMeansNarrowsWithMoreRuns(t *testing.T) {
	t.Parallel()
	few := RatioOfMeans([]float64{80, 100, 90}, []float64{90, 110, 100})
	var runs, ref []float64
	for range 10 {
		runs = append(runs, 80, 100, 90)
		ref = append(ref, 90, 110, 100)
	}
	many := RatioOfMeans(runs, ref)
	if many.High-many.Low >= few.High-few.Low {
		t.Fatalf("30 runs gave %.3f–%.3f, no narrower than 3 runs' %.3f–%.3f", many.Low, many.High, few.Low, few.High)
	}
	if RatioOfMeans(nil, ref) != (Ratio{}) || RatioOfMeans(runs, []float64{0, 0}) != (Ratio{}) {
		t.Fatal("no runs, or a zero reference, must give the zero Ratio")
	}
}
