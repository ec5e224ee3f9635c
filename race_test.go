//go:build race

package contextfold_test

const raceEnabled = true
