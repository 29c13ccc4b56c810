package compare

// The design effect for callers that hold their own counts by second
// (a watch of a fleet's servers: each read's bucket increments), so
// that their sequences read dependent requests as the live comparison
// does (see dependence.go).

// DesignEffect is the design effect of the count of values at or below
// x among the values each gives (n values of v in second sec, any
// order), at its upper confidence limit over single seconds: what a
// side's evidence is divided by. 1 for independent requests or too few
// seconds to tell.
func DesignEffect(each func(yield func(sec int32, v float64, n int64)), x float64) float64 {
	return designEffect(each, x)
}

// RateIntervalDependent is RateInterval with each side's evidence read
// at its design effect (DesignEffect over its outcomes: 0 completed, 1
// failed, at x 0.5).
func RateIntervalDependent(failedB, totalB int64, deffB float64, failedC, totalC int64, deffC, alpha float64) (Interval, bool) {
	return rateInterval([2]rateSide{{failedB, totalB, weight(deffB)}, {failedC, totalC, weight(deffC)}}, alpha)
}
