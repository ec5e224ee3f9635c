//go:build !race

package main

// raceOn is set when the tests run under the race detector (several times
// slower): the heaviest tests run on a sample of their cases.
const raceOn = false
