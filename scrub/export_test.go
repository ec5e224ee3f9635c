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

// PrefilteredRules returns the ids of the gitleaks rules the match
// prefilter can rule out (prefilter.go), sorted.
func PrefilteredRules() []string {
	if _, err := sharedDetector(); err != nil {
		panic(err)
	}
	ids := make([]string, len(detPre.rules))
	for i, r := range detPre.rules {
		ids[i] = r.id
	}
	return ids
}

// PrefilterKeeps reports whether the detector the prefilter picks for text
// runs rule id.
func PrefilterKeeps(text, id string) bool {
	_, ok := detPre.detector(text).Config.Rules[id]
	return ok
}

// PrefilterKeepsFor is PrefilterKeeps for one text and any rule: it picks
// the detector for text once (a scan of the text) where PrefilterKeeps
// picks it on every call.
func PrefilterKeepsFor(text string) func(id string) bool {
	rules := detPre.detector(text).Config.Rules
	return func(id string) bool {
		_, ok := rules[id]
		return ok
	}
}

// RuleMatches reports whether rule id's expression (as the detector runs
// it) matches text anywhere.
func RuleMatches(s *Scrubber, text, id string) bool { return s.rules[id].Regex.MatchString(text) }
