package ranked

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Rule "the prompt's words together" (Params.Proximity): two messages hold
// the prompt's two words once each and are as long; one says them side by
// side, the other in two unrelated sentences. Off, the tie goes to the
// newer message; on, the one holding them together ranks first, says why,
// and the same input gives the same picks.
func TestProximityOrders(t *testing.T) {
	build := func() *Index {
		ix := NewIndex()
		for i := range 40 {
			switch i {
			case 10: // the same words as step 30, the prompt's side by side
				ix.Add(i, "near", 20, "s", "adopted rescue greyhound dinner plans week home weather movie garden tickets music")
			case 30:
				ix.Add(i, "far", 20, "s", "rescue dinner plans week home weather adopted movie garden tickets music greyhound")
			default:
				ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("routine chatter about the weekend number %d", i))
			}
		}
		return ix
	}
	prompt := "did they adopt the rescue greyhound?"
	off := DefaultParams()
	off.Proximity = 0
	on := DefaultParams()
	on.Proximity = 1
	if r := build().Scan(prompt, off); len(r.Picks) == 0 || r.Picks[0].Step != 30 {
		t.Fatalf("proximity off: picks %+v, want step 30 first (tie to the newer)", r.Picks)
	}
	r := build().Scan(prompt, on)
	if len(r.Picks) == 0 || r.Picks[0].Step != 10 {
		t.Fatalf("proximity on: picks %+v, want step 10 (the words together) first", r.Picks)
	}
	if why := strings.Join(r.Picks[0].Why, "; "); !strings.Contains(why, "the prompt's words together") {
		t.Errorf("first pick's reasons %q do not name the rule", why)
	}
	if again := build().Scan(prompt, on); !reflect.DeepEqual(again, r) {
		t.Errorf("same input, different result:\n%+v\n%+v", r, again)
	}
	// A node holding one prompt word only gets no bonus: its rank is the
	// same on and off.
	one := build()
	one.Add(40, "one", 10, "s", "a greyhound")
	rank := func(p Params) float64 {
		one.mu.Lock()
		defer one.mu.Unlock()
		q := one.query(prompt, p)
		cands := one.score(q, p, -1)
		one.proximityRank(q, cands, p)
		for _, c := range cands {
			if one.docs[c.doc].step == 40 {
				return c.rank()
			}
		}
		t.Fatal("step 40 is no candidate")
		return 0
	}
	if a, b := rank(off), rank(on); a != b {
		t.Errorf("a node with one prompt word ranks %v with proximity, %v without", b, a)
	}
}

// proximityScore is never negative, is 0 without two different prompt
// words within the window, and is larger for words nearer each other.
func TestProximityScore(t *testing.T) {
	ix := NewIndex()
	for i := range 20 {
		ix.Add(i, fmt.Sprint(i), 10, "s", fmt.Sprintf("alpha beta gamma %d", i))
	}
	ix.Add(20, "a", 10, "s", "violin teacher")
	ix.mu.Lock()
	defer ix.mu.Unlock()
	q := ix.query("violin teacher", DefaultParams())
	byText := map[string]int{}
	gw := make([]float64, q.groups)
	for i, tm := range q.terms {
		byText[tm.text] = i
		gw[tm.group] = max(gw[tm.group], tm.weight)
	}
	score := func(text string) float64 { return proximityScore(text, q, byText, gw, 1.2, 1.2) }
	adj, gap, far := score("my violin teacher"), score("my violin was a gift from my teacher"), score("violin apple river stone cloud grass paper teacher")
	if !(adj > gap && gap > 0) {
		t.Errorf("adjacent %v, three words apart %v: want adjacent > apart > 0", adj, gap)
	}
	if far != 0 {
		t.Errorf("seven words apart: %v, want 0 (outside the window)", far)
	}
	if v := score("violin violin violin"); v != 0 {
		t.Errorf("one word repeated: %v, want 0", v)
	}
}
