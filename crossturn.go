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
// so work prepared ahead for it (Store.Prepare) still applies. With
// scrubbing off it returns turns unchanged. Cost: our context rules over
// every text of the batch (a fraction of a scrub) and one scan per text
// for the values found. Errors: those of the store's scrubber settings.
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
		changed := false
		red := func(x string) string {
			y, n := all.Redact(x)
			changed = changed || n > 0
			return y
		}
		list := func(l []string) []string {
			if l == nil {
				return nil
			}
			c := make([]string, len(l))
			for k, x := range l {
				c[k] = red(x)
			}
			return c
		}
		c := t
		c.SessionID, c.Summary, c.RawContent = red(t.SessionID), red(t.Summary), red(t.RawContent)
		c.Files, c.Commands, c.Errors = list(t.Files), list(t.Commands), list(t.Errors)
		if changed {
			out[i] = c
		}
	}
	return out, nil
}
