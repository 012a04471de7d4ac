package candidates

// SetSeedFactor changes seedFactor for a test and returns the undo.
func SetSeedFactor(n int) func() {
	old := seedFactor
	seedFactor = n
	return func() { seedFactor = old }
}

// SetPruning turns the pruning of the walk on or off for a test and
// returns the undo.
func SetPruning(on bool) func() {
	old := pruning
	pruning = on
	return func() { pruning = old }
}

// CellBytes is the estimate of what one level of one candidate costs.
const CellBytes = cellBytes

// OnSample makes f learn whether each randomized search drew its sample
// (else it built every candidate), for a test; it returns the undo.
func OnSample(f func(drawn bool)) func() {
	old := sampled
	sampled = f
	return func() { sampled = old }
}

// CheckEvery is how many steps go by between two looks at the context.
const CheckEvery = checkEvery

// OnYield replaces what a search calls to let other goroutines run, for a
// test; it returns the undo.
func OnYield(f func()) func() {
	old := yield
	yield = f
	return func() { yield = old }
}
