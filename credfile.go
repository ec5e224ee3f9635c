package contextfold

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/contextfold/contextfold/scrub"
)

// credFileRule is the rule whose marker redacts the lines of a credential
// file printed by another turn's command.
const credFileRule = "contextfold-credential-file"

// credFileScanMax bounds how much of a turn's payload is read for the
// commands of its tool calls (bytes): a call is small, a big payload is
// an output.
const credFileScanMax = 16 << 10

// turnCommands returns the command lines turn t runs whose output is not
// in t: its Commands field as given; the "command" (or "cmd") of the tool
// calls its payload shows as JSON (Claude Code's Bash {"command": …},
// Codex's shell {"command": ["bash", "-lc", …]} and exec_command {"cmd":
// …}, as the proxy and the ingest parsers store a call); and its
// payload's last line, a shell's line whose output a terminal sent as the
// next message. At most credFileScanMax bytes of the payload are read.
func turnCommands(t Turn) []string {
	out := slices.Clone(t.Commands)
	p := t.RawContent
	if p == "" {
		p = t.Summary
	}
	head := p[:min(len(p), credFileScanMax)]
	for _, key := range []string{`"command"`, `"cmd"`} {
		for off := 0; off < len(head); {
			k := strings.Index(head[off:], key)
			if k < 0 {
				break
			}
			off += k + len(key)
			rest := strings.TrimLeft(head[off:], " \t\r\n")
			if !strings.HasPrefix(rest, ":") {
				continue
			}
			if c := jsonCommand(strings.TrimLeft(rest[1:], " \t\r\n")); c != "" {
				out = append(out, c)
			}
		}
	}
	last := strings.TrimRight(p, " \t\r\n")
	last = last[strings.LastIndexByte(last, '\n')+1:]
	if last != "" {
		out = append(out, last)
	}
	return out
}

// jsonCommand returns the command of the JSON value that starts s: a
// string, or an array of strings (an argv: the script after "-c" or
// "-lc" of a shell, or the words joined by blanks); "" for anything else.
func jsonCommand(s string) string {
	if s == "" || s[0] != '"' && s[0] != '[' {
		return ""
	}
	d := json.NewDecoder(strings.NewReader(s))
	var v any
	if d.Decode(&v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case []any:
		argv := make([]string, 0, len(v))
		for _, a := range v {
			w, ok := a.(string)
			if !ok {
				return ""
			}
			argv = append(argv, w)
		}
		if n := len(argv); n >= 2 && strings.HasPrefix(argv[n-2], "-") && strings.HasSuffix(argv[n-2], "c") {
			return argv[n-1] // bash -lc SCRIPT, sh -c SCRIPT
		}
		return strings.Join(argv, " ")
	}
	return ""
}

// readsCredFile reports whether turn t runs a command that prints a
// credential file (scrub.CredentialFileCommand), its output left to the
// next turn.
func readsCredFile(t Turn) bool {
	for _, c := range turnCommands(t) {
		if scrub.CredentialFileCommand(c) {
			return true
		}
	}
	return false
}

// credFileBody returns where the output proper of a tool result starts in
// payload: after the label lines ingest puts before it ("[tool
// tool_result Bash]", "[tool_result id=call_1]", three at most) and the
// blank lines around them, and after the header Codex puts before a
// command's output (Exit code: …, Wall time: …, then a line "Output:").
func credFileBody(payload string) int {
	p := 0
	line := func() string {
		e := strings.IndexByte(payload[p:], '\n')
		if e < 0 {
			return payload[p:]
		}
		return payload[p : p+e+1]
	}
	for n := 0; n < 3; n++ {
		for p < len(payload) && strings.TrimSpace(line()) == "" {
			p += len(line())
		}
		l := strings.TrimSpace(line())
		if !strings.HasPrefix(l, "[") || !strings.HasSuffix(l, "]") || strings.ContainsAny(l, ":") {
			break
		}
		p += len(line())
	}
	for p < len(payload) && strings.TrimSpace(line()) == "" {
		p += len(line())
	}
	if strings.HasPrefix(payload[p:], "Exit code:") || strings.HasPrefix(payload[p:], "Chunk ID:") {
		for q, n := p, 0; q < len(payload) && n < 8; n++ {
			e := strings.IndexByte(payload[q:], '\n')
			if e < 0 {
				break
			}
			if strings.TrimSpace(payload[q:q+e]) == "Output:" {
				return q + e + 1
			}
			q += e + 1
		}
	}
	return p
}

// credFileValues returns the secrets of a tool result's payload read as
// the lines a credential file's command printed (scrub.CredentialFileOutput),
// as spans of payload. A payload that is Codex's JSON wrapping of an output
// ({"output": "…", "metadata": {…}}) is read in its decoded "output", and
// the values' JSON-escaped forms are found in payload: a span per
// occurrence within the wrapped output.
func credFileValues(payload string) [][2]int {
	if t := strings.TrimLeft(payload, " \t\r\n"); strings.HasPrefix(t, `{"output":`) {
		var w struct {
			Output *string `json:"output"`
		}
		if json.Unmarshal([]byte(t), &w) != nil || w.Output == nil {
			return nil
		}
		lead := len(payload) - len(t)
		from := lead + len(`{"output":`)
		var out [][2]int
		for _, sp := range credFileValues(*w.Output) {
			b, _ := json.Marshal((*w.Output)[sp[0]:sp[1]])
			esc := string(b[1 : len(b)-1])
			for off := from; ; {
				k := strings.Index(payload[off:], esc)
				if k < 0 {
					break
				}
				out = append(out, [2]int{off + k, off + k + len(esc)})
				off += k + len(esc)
			}
		}
		slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
		return out
	}
	at := credFileBody(payload)
	spans := scrub.CredentialFileOutput(payload[at:])
	for i := range spans {
		spans[i][0] += at
		spans[i][1] += at
	}
	return spans
}

// credFileOutputs redacts the lines of a credential file that a turn's
// command printed and the next turn (step + 1) shows: an agent's tool
// call ("cat /etc/rsyncd.secrets") and its tool result are two turns,
// where the contextfold-credential-file rule, which reads a command and
// its output in one text, saw neither as a credential file. The command
// is the output turn's OutputOf when its caller paired them (the proxy,
// ingest, the Stop hook); else the turn of the step before, read
// (turnCommands) from the batch (folded now, or stored before and given
// again with it), from this Store's memory of the last turn an earlier
// fold event folded (sessionSecrets.credStep), or else from the store by
// stored (a turn another process folded: the CLI's fold of one turn a
// call, an MCP server started again; one node read, only when that step
// is stored and neither in the batch nor remembered). The command
// survives the scrub of its stored node: it is no secret. Each secret is
// redacted in the output's payload, and its value in the turn's other
// fields (a summary quoting the first line); a value of 8 bytes or more
// is learnt for the session's later turns. Callers hold s.mu; ss.mu is
// taken here.
func (s *Store) credFileOutputs(sc *scrub.Scrubber, turns []Turn, want []int, stored func(step int) (Turn, bool)) []Turn {
	if sc == nil || len(want) == 0 {
		return turns
	}
	ss := &s.secrets
	ss.mu.Lock()
	defer ss.mu.Unlock()
	at := make(map[int]int, len(turns)) // step → position in turns
	for i, t := range turns {
		if _, ok := at[t.StepID]; !ok {
			at[t.StepID] = i
		}
	}
	order := slices.Clone(want)
	slices.SortFunc(order, func(x, y int) int { return turns[x].StepID - turns[y].StepID })
	var out []Turn
	for _, i := range order {
		t := turns[i]
		step := t.StepID
		prev, inBatch := at[step-1]
		reads := scrub.CredentialFileCommand(t.OutputOf)
		switch {
		case reads:
		case inBatch:
			reads = readsCredFile(turns[prev])
		case ss.credKnown && ss.credStep == step-1:
			reads = ss.credReads
		case stored != nil:
			if p, ok := stored(step - 1); ok {
				reads = readsCredFile(p)
			}
		}
		if !reads {
			continue
		}
		raw := t.RawContent
		spans := credFileValues(raw)
		if len(spans) == 0 {
			continue
		}
		var k scrub.Known
		var short []string // values Known does not take: too short
		var b strings.Builder
		last := 0
		for _, sp := range spans {
			if sp[0] < last {
				continue
			}
			if v := raw[sp[0]:sp[1]]; k.AddValue(v, credFileRule) == 0 && !slices.Contains(short, v) {
				short = append(short, v)
			}
			b.WriteString(raw[last:sp[0]])
			b.WriteString(scrub.RedactionMarker(credFileRule))
			last = sp[1]
		}
		b.WriteString(raw[last:])
		if out == nil {
			out = slices.Clone(turns)
		}
		c := out[i]
		c.RawContent = b.String()
		c.shared += len(spans)
		c = redactTurn(c, &k)
		// A short value the summary quotes (the output's first line).
		for _, v := range short {
			if n := strings.Count(c.Summary, v); n > 0 {
				c.Summary = strings.ReplaceAll(c.Summary, v, scrub.RedactionMarker(credFileRule))
				c.shared += n
			}
		}
		out[i] = c
		ss.learn(&k)
	}
	// Whether the latest turn folded now runs such a command, for the
	// next fold event.
	lastNew := turns[order[len(order)-1]]
	ss.credStep, ss.credKnown, ss.credReads = lastNew.StepID, true, readsCredFile(lastNew)
	if out == nil {
		return turns
	}
	return out
}
