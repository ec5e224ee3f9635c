// Command agentloop is a runnable example of the harness in a Go agent loop:
// a scripted model asks for tool calls whose verbose output grows the
// conversation; before every model call PreTurnDispatch folds the cold
// turns and hydrates what the latest prompt mentions, and after it
// PostTurnResponse evicts the hydrated nodes.
//
//	go run ./examples/agentloop [-dir /tmp/agentloop-store]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/harness"
)

func main() {
	dir := flag.String("dir", "", "store directory (default: a temporary directory)")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "agentloop-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	store, err := contextfold.Open(*dir, contextfold.Options{SessionID: "agentloop"})
	if err != nil {
		log.Fatal(err)
	}
	h := harness.New(store, harness.Config{})

	conv := []harness.Message{{Role: harness.RoleSystem, Parts: []harness.Part{{Text: "You are a coding agent."}}}}
	prompts := []string{"run the tests of every package", "summarise what you saw", "which package printed the flaky warning in pkg02?"}
	for _, prompt := range prompts {
		conv = append(conv, harness.Message{Role: harness.RoleUser, Human: true, Parts: []harness.Part{{Text: prompt, Foldable: true}}})
		for step := 0; step < 12; step++ { // the agent's tool round trips for this prompt
			d, err := h.PreTurnDispatch(conv)
			if err != nil {
				log.Fatal(err)
			}
			out := d.Apply(conv) // what the model sees
			reply, tool := model(out, step)
			if _, err := h.PostTurnResponse(d); err != nil {
				log.Fatal(err)
			}
			a := d.Accounting
			fmt.Printf("prompt %-50q call %2d: %3d msgs, client %6d tokens, forwarded %6d, folded %6d, hydrated %v\n",
				prompt, step, len(conv), a.ClientTokens, a.ForwardedTokens, a.FoldedTokens, a.StepsHydrated)
			conv = append(conv, harness.Message{Role: harness.RoleAssistant, Parts: []harness.Part{{Text: reply, Foldable: true}}})
			if tool == "" {
				break
			}
			conv = append(conv, harness.Message{Role: harness.RoleTool, Tool: "bash", Command: tool,
				Parts: []harness.Part{{Text: runTool(tool), Foldable: true, ToolResult: true}}})
		}
	}
}

// model is a scripted stand-in for an LLM: it runs tests package by package
// for the first prompt, then answers.
func model(conv []harness.Message, step int) (reply, tool string) {
	last := conv[len(conv)-1]
	if strings.Contains(last.Text(), "run the tests") || (last.Role == harness.RoleTool && step < 10 && strings.Contains(conv[1].Text(), "run the tests") && len(conv) < 24) {
		cmd := fmt.Sprintf("go test ./pkg%02d/...", step)
		return "Running " + cmd, cmd
	}
	if strings.Contains(last.Text(), harness.HydrationOpen) {
		return "The hydrated log of that step shows the flaky warning.", ""
	}
	return "Done.", ""
}

// runTool fakes a verbose tool output.
func runTool(cmd string) string {
	var b strings.Builder
	pkg := strings.TrimSuffix(strings.TrimPrefix(cmd, "go test ./"), "/...")
	for i := range 60 {
		fmt.Fprintf(&b, "=== RUN   Test%s_%03d\n--- PASS: Test%s_%03d (0.01s)\n", pkg, i, pkg, i)
	}
	if pkg == "pkg02" {
		b.WriteString("WARNING: flaky timing in TestPkg02_cache\n")
	}
	fmt.Fprintf(&b, "ok  \texample.com/%s\t0.61s\n", pkg)
	return b.String()
}
