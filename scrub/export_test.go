package scrub

// RaceEnabled tells the external tests (package scrub_test) that the race
// detector is on, so that they keep their runs short.
const RaceEnabled = raceEnabled
