package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/contextfold/contextfold/ingest"
	"github.com/contextfold/contextfold/internal/matcheval"
)

// censusMessage is a rendered user message and what its transcript says
// it is.
type censusConv struct {
	name string
	conv []Message
	// truth[i] for each user message i: "observation" (a scaffold's) or
	// "human" (a prompt); other user messages are not counted.
	truth map[int]string
}

// renderTurns renders ingested turns as a scaffold that writes its actions
// in text sends them: every observation, whatever role the transcript
// gives it, as a user message (the case the signal is for), consecutive
// assistant turns as one assistant message (its text, tool calls
// included), tool results as tool messages.
func renderTurns(name string, turns []ingest.Turn) censusConv {
	c := censusConv{name: name, truth: map[int]string{}}
	for _, t := range turns {
		t.Payload = ingestHeader.ReplaceAllString(t.Payload, "")
		switch {
		case t.Role == "system":
			c.conv = append(c.conv, Message{Role: RoleSystem, Parts: []Part{{Text: t.Payload}}})
		case t.Kind == "observation":
			c.truth[len(c.conv)] = "observation"
			c.conv = append(c.conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: t.Payload}}})
		case t.Role == "user" && t.Kind == "prompt":
			c.truth[len(c.conv)] = "human"
			c.conv = append(c.conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: t.Payload}}})
		case t.Role == "user":
			c.conv = append(c.conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: t.Payload}}})
		case t.Role == "assistant":
			if n := len(c.conv); n > 0 && c.conv[n-1].Role == RoleAssistant {
				c.conv[n-1].Parts[0].Text += "\n\n" + t.Payload
				continue
			}
			c.conv = append(c.conv, Message{Role: RoleAssistant, Parts: []Part{{Text: t.Payload}}})
		default:
			c.conv = append(c.conv, Message{Role: RoleTool, AnswersTool: true, Parts: []Part{{Text: t.Payload, ToolResult: true}}})
		}
	}
	return c
}

// ingestHeader is the line package ingest writes atop a turn's payload
// ("[tool observation bash]", "[user prompt]"): not the scaffold's text.
var ingestHeader = regexp.MustCompile(`\A\[[a-z]+ [a-z_]+[^\]\n]*\]\n\n`)

// censusSessions are every bundled transcript (ingest/testdata), the
// mini-swe-agent corpus, all of them chained into one session, and the
// LoCoMo conversations (each speaker in the user role in turn).
func censusSessions(t *testing.T) []censusConv {
	const dir = "../ingest/testdata/transcripts"
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (!strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".history.md")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	if len(files) < 26 {
		t.Fatalf("%d transcripts under %s, want the 6 bundled and the 25 of the corpus", len(files), dir)
	}
	var out []censusConv
	var chained []ingest.Turn
	for _, f := range files {
		res, err := ingest.ParseFile(f, ingest.FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, renderTurns(strings.TrimPrefix(f, dir+"/"), res.Turns))
		if !strings.Contains(f, "/corpus/") {
			for i, tr := range res.Turns {
				if tr.Role == "system" && len(chained) > 0 && i == 0 {
					tr.Role, tr.Kind = "user", "prompt"
				}
				chained = append(chained, tr)
			}
		}
	}
	out = append(out, renderTurns("all bundled transcripts chained", chained))
	data, err := matcheval.LoadLoCoMo("../internal/matcheval/testdata/locomo/locomo10.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range data {
		turns := s.Turns()
		for _, first := range []bool{true, false} {
			c := censusConv{name: "locomo/" + s.SampleID, truth: map[int]string{}}
			for _, d := range turns {
				if (d.Speaker == turns[0].Speaker) == first {
					c.truth[len(c.conv)] = "human"
					c.conv = append(c.conv, Message{Role: RoleUser, Human: true, Parts: []Part{{Text: d.Text}}})
				} else {
					c.conv = append(c.conv, Message{Role: RoleAssistant, Parts: []Part{{Text: d.Text}}})
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// TestTemplateObservationCensus classes every user message of every
// bundled transcript, the 25 corpus sessions, their chain and the LoCoMo
// conversations: no human prompt may be classed a template observation
// (the signal needs no list of scaffolds, so it must never take a person
// for one); of the observations, it reports how many the signal alone
// finds (-v), and requires most of those that follow an action written in
// text.
func TestTemplateObservationCensus(t *testing.T) {
	var obs, obsPrefix, obsTemplate, obsEither, obsAfterAction, humans, humansTemplate int
	locomo := 0
	for _, c := range censusSessions(t) {
		var o, ot, h int
		for i, kind := range c.truth {
			tmpl := templateObservation(c.conv, i)
			switch kind {
			case "observation":
				o++
				obs++
				if c.conv[i].isObservation() {
					obsPrefix++
				}
				if tmpl {
					ot++
					obsTemplate++
				}
				if tmpl || c.conv[i].isObservation() {
					obsEither++
				}
				if actionInText(c.conv[i-1]) {
					obsAfterAction++
				}
			case "human":
				h++
				humans++
				if strings.HasPrefix(c.name, "locomo/") {
					locomo++
				}
				if tmpl {
					humansTemplate++
					t.Errorf("%s: the human prompt at message %d is classed a template observation: %.200q", c.name, i, c.conv[i].leadingText())
				}
			}
		}
		if !strings.HasPrefix(c.name, "locomo/") {
			t.Logf("%s: %d observations, %d by the template signal; %d human prompts", c.name, o, ot, h)
		}
	}
	t.Logf("all: %d observations (%d after an action written in text): %d by the known openings, %d by the template signal, %d by either; %d human prompts (%d of LoCoMo), %d classed observation",
		obs, obsAfterAction, obsPrefix, obsTemplate, obsEither, humans, locomo, humansTemplate)
	if obsTemplate*10 < obsAfterAction*8 {
		t.Errorf("the template signal found %d of the %d observations that follow an action written in text, want at least 80 %%", obsTemplate, obsAfterAction)
	}
}
