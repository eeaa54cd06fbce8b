package stats

import (
	"math/rand/v2"
	"slices"
)

// Ratio is how one runner's rate compares with a reference runner's over
// all their runs: the ratio of the two means, with a bootstrap interval
// that says how far the runs' scatter leaves it uncertain.
type Ratio struct {
	// Of is mean(runs) / mean(reference runs).
	Of float64
	// Low and High bound the central 95% of the ratio over resamples of
	// both sets of runs (each drawn with replacement, at its own size).
	Low, High float64
	// Runs and Reference are the sample sizes.
	Runs, Reference int
}

// bootstrapDraws is how many resamples a Ratio's interval is taken from.
const bootstrapDraws = 4000

// RatioOfMeans compares runs with reference. The interval is a percentile
// bootstrap from a fixed seed, so the same runs always print the same
// interval. Either set empty, or a reference mean of zero, gives the zero
// Ratio.
func RatioOfMeans(runs, reference []float64) Ratio {
	if len(runs) == 0 || len(reference) == 0 || mean(reference) == 0 {
		return Ratio{}
	}
	r := Ratio{Of: mean(runs) / mean(reference), Runs: len(runs), Reference: len(reference)}
	rnd := rand.New(rand.NewPCG(1, 2))
	draws := make([]float64, 0, bootstrapDraws)
	for range bootstrapDraws {
		den := resampledMean(rnd, reference)
		if den == 0 {
			continue
		}
		draws = append(draws, resampledMean(rnd, runs)/den)
	}
	slices.Sort(draws)
	r.Low, r.High = draws[len(draws)*25/1000], draws[len(draws)*975/1000]
	return r
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func resampledMean(rnd *rand.Rand, xs []float64) float64 {
	s := 0.0
	for range xs {
		s += xs[rnd.IntN(len(xs))]
	}
	return s / float64(len(xs))
}
