package scrub

// RaceEnabled tells the external tests (package scrub_test) that the race
// detector is on, so that they keep their runs short.
const RaceEnabled = raceEnabled

// ExtraRuleIDs returns the ids of our own rules (extra.go), in their order.
func ExtraRuleIDs() []string {
	ids := make([]string, len(extraRules))
	for i, r := range extraRules {
		ids[i] = r.id
	}
	return ids
}

// ExtraRuleLookAlikes are the look-alikes TestExtraRules keeps unchanged.
var ExtraRuleLookAlikes = extraRuleLookAlikes
