package contextfold

import "github.com/contextfold/contextfold/scrub"

// ShareSecrets returns turns (a new slice; the turns it changes are
// copies) where every value that the context of one turn reveals as a
// secret (CLOUDFLARE_API_KEY=…, "password": "…", a .pgpass line, docker
// login -p …; scrub.Known.AddContext) is redacted in every other turn of
// the batch that shows it, bare or encoded (base64, percent, JSON, HTML).
// Fold scrubs each turn on its own, so without it a value one turn's tool
// output marked as a secret stayed in plain in the turn whose assistant
// text repeated it ("the key … is set"), earlier or later in the batch.
// A vendor token (ghp_…, sk_live_…) needs no sharing: its rule finds it
// in every turn.
//
// A turn without such a value from another turn is returned as given,
// so work prepared ahead for it (Store.Prepare) still applies; a turn with
// one is scrubbed here once more (its own secrets are redacted with the
// other turns' values, so that a shared value holding part of its context
// hides none of them). With scrubbing off it returns turns unchanged.
// Cost: our context rules over every text of the batch (a fraction of a
// scrub), one scan per text for the values found, and a scrub of each turn
// that shows another's value. Errors: those of the store's scrubber
// settings.
func (s *Store) ShareSecrets(turns []Turn) ([]Turn, error) {
	sc, err := s.scrubber()
	if err != nil || sc == nil || len(turns) < 2 {
		return turns, err
	}
	texts := func(t Turn) []string {
		out := []string{t.SessionID, t.Summary, t.RawContent}
		out = append(out, t.Files...)
		out = append(out, t.Commands...)
		return append(out, t.Errors...)
	}
	// own[i]: the values turn i reveals itself (its own scrub redacts
	// them); all: every turn's.
	own := make([]scrub.Known, len(turns))
	var all scrub.Known
	for i, t := range turns {
		for _, x := range texts(t) {
			own[i].AddContext(sc, x)
			all.AddContext(sc, x)
		}
	}
	if all.Len() == 0 {
		return turns, nil
	}
	out := make([]Turn, len(turns))
	copy(out, turns)
	for i, t := range turns {
		if own[i].Len() == all.Len() {
			continue // nothing from another turn to share
		}
		foreign := false
		for _, x := range texts(t) {
			if _, n := all.RedactExcept(x, &own[i]); n > 0 {
				foreign = true
				break
			}
		}
		if !foreign {
			continue
		}
		// Another turn's value can hold this turn's context (a value
		// read as "SQUARESPACE,<token>" after "?key=" in the tool call
		// holds the keyword the tool output's token needs): redacted
		// first, it would hide the token from this turn's own rules.
		// So every secret this turn's own scrub finds is redacted too,
		// with the other turns' values.
		var k scrub.Known
		k.Merge(&all)
		for _, x := range texts(t) {
			k.AddFound(sc, x)
		}
		shared := 0
		red := func(x string) string {
			y, n := k.Redact(x)
			shared += n
			return y
		}
		list := func(l []string) []string {
			if l == nil {
				return nil
			}
			c := make([]string, len(l))
			for j, x := range l {
				c[j] = red(x)
			}
			return c
		}
		c := t
		c.SessionID, c.Summary, c.RawContent = red(t.SessionID), red(t.Summary), red(t.RawContent)
		c.Files, c.Commands, c.Errors = list(t.Files), list(t.Commands), list(t.Errors)
		c.shared += shared
		out[i] = c
	}
	return out, nil
}
