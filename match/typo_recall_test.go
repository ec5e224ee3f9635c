package match_test

import (
	"fmt"
	"testing"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/match"
)

// Recall (ranked) counts a prompt word that a node holds only misspelt
// (rule "typos") towards its coverage, as it counts one held only through
// an alias: a node answering "pottery classes" with "potery classes" holds
// both words, and is the latest_chronological hit, not the newer node
// holding "classes" alone (which it labelled so, and the misspelt answer
// historical, when a typo variant counted for nothing).
func TestRecallCountsTypoCoverage(t *testing.T) {
	s := newStore(t, `{"matching": "ranked"}`)
	fold(t, s,
		contextfold.Turn{StepID: 1, Summary: "user: I signed up for potery classes at the community center"},
		contextfold.Turn{StepID: 2, Summary: "user: the kids start swimming classes next week"},
		contextfold.Turn{StepID: 3, Summary: "user: we went to the beach on saturday"},
		contextfold.Turn{StepID: 4, Summary: "user: my brother hates his yoga classes"},
	)
	hits, err := match.Recall(s, "pottery classes", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, fmt.Sprintf("%d %s cov %d", h.StepID, h.Status, h.Coverage))
	}
	if len(hits) == 0 || hits[0].StepID != 1 || hits[0].Status != contextfold.StatusLatest || hits[0].Coverage != 2 {
		t.Fatalf("recall %q: %v, want step 1 first, latest_chronological, coverage 2", "pottery classes", got)
	}
	for _, h := range hits[1:] {
		if h.Status != contextfold.StatusRelated {
			t.Errorf("recall %q: %v, want the nodes holding only \"classes\" related", "pottery classes", got)
		}
	}
	// A node holding the word both spelt right and misspelt counts it once.
	fold(t, s, contextfold.Turn{StepID: 5, Summary: "user: pottery classes, or potery classes as the flyer says"})
	hits, err = match.Recall(s, "pottery classes", match.Ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].StepID != 5 || hits[0].Coverage != 2 {
		t.Fatalf("recall %q after step 5: %+v, want step 5 first, coverage 2", "pottery classes", hits)
	}
}
