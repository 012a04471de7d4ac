package candidates

// SetSeedFactor changes seedFactor for a test and returns the undo.
func SetSeedFactor(n int) func() {
	old := seedFactor
	seedFactor = n
	return func() { seedFactor = old }
}
