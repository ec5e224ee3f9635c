package scrub

import (
	"regexp"
	"strings"
)

// Rules for secrets whose only marker is a file's name, a column's name in
// a SQL statement, a wrapper the value sits in (CDATA, a TOML multi-line
// string, a Wi-Fi QR code) or a line break a terminal put in the middle of
// a token. They join extraRules (init below) and are run the same way;
// each looks back and ahead a bounded way.
//
//   - contextfold-credential-file: the lines a command prints of a file
//     whose name says it holds credentials (cat /etc/rsyncd.secrets, head
//     chap-secrets, cat auth.txt, type users.txt), or that follow a
//     comment naming such a file (# /etc/ppp/chap-secrets): USER:PASSWORD
//     lines (rsyncd.secrets, a plain user list), the third field of
//     blank-separated lines (pppd's chap-secrets and pap-secrets, davfs2's
//     secrets), the second of USER PASSWORD lines, and the last line of a
//     file of one or two words (OpenVPN's auth-user-pass file, a token
//     file).
//   - contextfold-sql-column-secret: the values of a SQL INSERT (or
//     REPLACE) … (COLUMNS) VALUES (…), (…) in the columns whose name is a
//     secret's (password, api_key, client_secret, token; not
//     password_hash), and of pg_dump's COPY … (COLUMNS) FROM stdin rows.
//   - contextfold-xml-secret (CDATA form): <password><![CDATA[VALUE]]>
//     </password>.
//   - contextfold-env-secret (multi-line form): a TOML or Python
//     triple-quoted string under a secret's name (password = """VALUE""").
//   - contextfold-wifi-password: the P: field of a Wi-Fi QR code's text
//     (WIFI:S:NAME;T:WPA;P:PASSWORD;;).
//
// wrappedFindings (not a rule: it reads the other rules' findings) adds
// the rest of a secret a terminal wrapped onto the next line.

func init() {
	extraRules = append(extraRules, namedRules...)
}

var namedRules = []extraRule{
	{
		id:      "contextfold-credential-file",
		anchors: credFileCommands,
		begin:   credFileCommandStart,
		// The command's line, then up to credFileMaxLines lines of output
		// (credFileSecrets reads them).
		re:     regexp.MustCompile(`^[^\n]*\n`),
		maxLen: credFileMaxBytes,
		multi:  credFileSecrets,
	},
	{
		id:      "contextfold-credential-file",
		anchors: []string{"-secrets", ".secrets", "/secrets"},
		begin:   credFileHeaderStart,
		re:      regexp.MustCompile(`^[^\n]*\n`),
		maxLen:  credFileMaxBytes,
		multi:   credFileSecrets,
	},
	{
		id:      "contextfold-sql-column-secret",
		anchors: []string{"NSERT", "nsert", "EPLACE", "eplace"},
		begin:   sqlVerbStart,
		// 1: the column list; the VALUES tuples after it are read by
		// sqlInsertSecrets.
		re:     regexp.MustCompile(`^(?i:insert|replace)(?:[ \t\r\n]+(?i:ignore|or[ \t]+[a-z]+|low_priority|delayed|high_priority))?[ \t\r\n]+(?i:into)[ \t\r\n]+[A-Za-z0-9_."` + "`" + `\[\]]{1,256}[ \t\r\n]*\(([^()]{1,1000})\)[ \t\r\n]*(?i:values)[ \t\r\n]*\(`),
		maxLen: sqlMaxBytes,
		multi:  sqlInsertSecrets,
	},
	{
		id:      "contextfold-sql-column-secret",
		anchors: []string{"COPY ", "copy "},
		begin:   wordStart,
		// pg_dump's data: COPY TABLE (COLUMNS) FROM stdin; then
		// tab-separated rows up to a line "\.". 1: the column list.
		re:     regexp.MustCompile(`^(?i:copy)[ \t]+[A-Za-z0-9_."]{1,256}[ \t]*\(([^()\n]{1,1000})\)[ \t]+(?i:from)[ \t]+(?i:stdin);?[ \t]*\r?\n`),
		maxLen: sqlMaxBytes,
		multi:  sqlCopySecrets,
	},
	{
		id:      "contextfold-xml-secret",
		anchors: []string{"<![CDATA["},
		begin:   cdataStart,
		// <NAME><![CDATA[VALUE]]></NAME>: 1 the tag, 2 the value, 3 the
		// closing tag, which must be the same.
		re:     regexp.MustCompile(`^<([A-Za-z_][A-Za-z0-9_.:-]*)>[ \t\r\n]*<!\[CDATA\[((?s:.)*?)\]\]>[ \t\r\n]*</([A-Za-z_][A-Za-z0-9_.:-]*)>`),
		maxLen: 4500,
		secret: xmlSecret,
	},
	{
		id:      "contextfold-env-secret",
		anchors: []string{`"""`, `'''`},
		begin:   tripleQuoteStart,
		// NAME = """VALUE""" (TOML, Python), the value on one line or
		// many: 1 the name (bare or quoted), 2 or 3 the value.
		re:     regexp.MustCompile(`^[ \t]*([A-Za-z_][A-Za-z0-9_.-]*|"[^"\n]{1,128}")[ \t]*[=:][ \t]*(?:"""((?s:.)*?)"""|'''((?s:.)*?)''')`),
		maxLen: 4500,
		secret: tripleQuoteSecret,
	},
	{
		id:      "contextfold-wifi-password",
		anchors: []string{"WIFI:", "WiFi:"},
		begin:   wordStart,
		// WIFI:FIELD:VALUE;…;; (the Wi-Fi QR code's text, values with
		// backslash escapes). 1: the fields.
		re:      regexp.MustCompile(`^(?i:wifi):((?:[A-Za-z]:(?:\\.|[^;\\\n])*;){1,8})`),
		maxLen:  1024,
		oneLine: true,
		secret:  wifiPassword,
	},
	{
		id:      "contextfold-env-secret",
		anchors: []string{":="},
		begin:   makeAssignStart,
		// A Makefile's NAME := VALUE (also ::=), the name upper case (Go's
		// token := … is code). 1: the name, 2: the value.
		re:      regexp.MustCompile(`^([A-Z][A-Z0-9_]*)[ \t]*:{1,2}=[ \t]*([^\s#]+)`),
		maxLen:  1024,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			return m[4], m[5], acceptEnvSecret(c[m[2]:m[3]], c[m[4]:m[5]])
		},
	},
	{
		id:      "contextfold-printed-secret",
		anchors: []string{"rraform output", "lumi config get", "lumi stack output", "fig:get", "oppler secrets get", "gh auth token", "t-login-password", "h:token", "ult print token"},
		begin:   printedMoreStart,
		// The one word (or quoted string) a command that prints a secret
		// writes on the next line (printedMoreStart). 1: it.
		re:     regexp.MustCompile(`^[^\n]*\n[ \t]*"?([^\s"]+)"?[ \t]*(?:\r?\n|$)`),
		maxLen: 2048,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 8 && !isPlaceholder(v) && !plainWord(v) && !strings.HasPrefix(v, "Error") && !strings.HasPrefix(v, "╷")
		},
	},
	{
		id:      "contextfold-cli-password",
		anchors: []string{"mc ", "xfreerdp", "wfreerdp", "wlfreerdp", "oauth2-bearer", "walletpassphrase", "sp_addlogin", "sp_password", "http ", "https "},
		begin:   wordStart,
		// The password of commands that take it by position or by an
		// option of their own (namedCLIForms). 1: the password, bare or
		// quoted.
		re:      regexp.MustCompile(`^(?:` + strings.Join(namedCLIForms, "|") + `)["']?([^\s"'@;]+)`),
		maxLen:  1024,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 4 && !isPlaceholder(v) && !plainWord(v) && !strings.ContainsAny(v[:1], "-([") &&
				!strings.HasPrefix(v, "env:") && !strings.HasPrefix(v, "file:")
		},
	},
	{
		id:      "contextfold-label-secret",
		anchors: []string{"assword", "assphrase", "ASSWORD", "ASSPHRASE"},
		begin:   samePromptStart,
		// A terminal prompt for a secret and what was typed after it on
		// the same line (ssh-keygen's "Enter passphrase (empty for no
		// passphrase): VALUE", "New password: VALUE"). 1: the value.
		re:      regexp.MustCompile(`^(?i:password|passphrase)(?:[ \t]+(?i:again|for[ \t]+[^\n:]{1,60}))?(?:[ \t]*\([^()\n]{0,60}\))?[ \t]*:[ \t]+([^\s'"` + "`" + `()\[\]{}<>|;,\\]+)`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			return m[2], m[3], labelValue(c[m[2]:m[3]])
		},
	},
	{
		id:      "contextfold-stdin-password",
		anchors: []string{"<<"},
		begin:   heredocStart,
		// A here-document fed to a command that reads passwords
		// (passwd, chpasswd, smbpasswd, htpasswd -i, … --password-stdin):
		// 1: the delimiter; its lines are read by heredocSecrets.
		re:     regexp.MustCompile(`^[^\n]*<<-?[ \t]*["']?([A-Za-z_][A-Za-z0-9_]{0,31})["']?[^\n]*\n`),
		maxLen: 4096,
		multi:  heredocSecrets,
	},
	{
		id:      "contextfold-spaced-secret",
		anchors: []string{"assword '", "assword \"", "ecret '", "ecret \"", "oken '", "oken \"", "ey '", "ey \"", "asswd '", "asswd \""},
		begin:   dslSecretStart,
		// A Groovy (Gradle) or Ruby DSL's NAME 'VALUE' on a line of its
		// own (signingConfigs' storePassword 'VALUE'). 1: the name, 2 or
		// 3: the value.
		re:      regexp.MustCompile(`^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]+(?:'([^'\n]*)'|"([^"\n]*)")[ \t]*;?[ \t]*(?:\r?\n|$)`),
		maxLen:  1024,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			s, e := m[4], m[5]
			if s < 0 {
				s, e = m[6], m[7]
			}
			v := c[s:e]
			return s, e, !strings.ContainsAny(v, " \t") && !modulePath.MatchString(v) && acceptEnvSecret(c[m[2]:m[3]], v)
		},
	},
	{
		id:      "contextfold-call-secret",
		anchors: []string{"process.env"},
		begin:   wordStart,
		// JavaScript's default for a secret's environment variable:
		// process.env.NAME || 'VALUE' (or ??, process.env['NAME']). 1:
		// the name, 2: the value.
		re:      regexp.MustCompile(`^process\.env(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[['"]([A-Za-z_][A-Za-z0-9_]*)['"]\])[ \t]*(?:\|\||\?\?)[ \t]*['"` + "`" + `]([^'"` + "`" + `\n]+)['"` + "`" + `]`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			name := ""
			if m[2] >= 0 {
				name = c[m[2]:m[3]]
			} else {
				name = c[m[4]:m[5]]
			}
			return m[6], m[7], acceptEnvSecret(name, c[m[6]:m[7]])
		},
	},
	{
		id:      "contextfold-keyed-secret",
		anchors: []string{`"github-oauth"`, `"gitlab-token"`, `"gitlab-oauth"`, `"bearer"`},
		begin:   func(_ string, p int) int { return p },
		// Composer's auth.json: tokens keyed by host ("github-oauth":
		// {"github.com": "TOKEN"}). 1: the object's members.
		re:     regexp.MustCompile(`^"(?:github-oauth|gitlab-token|gitlab-oauth|bearer)"[ \t\r\n]*:[ \t\r\n]*\{([^{}]{1,1000})\}`),
		maxLen: 2200,
		multi:  hostTokenValues,
	},
	{
		id:      "contextfold-private-key-block",
		anchors: []string{"-----BEGIN "},
		begin:   keyBlockStart,
		// A key block other than a PEM private key's (those are
		// contextfold-private-key-block's first form): OpenVPN's static
		// key, a SSH2 or PGP secret key, any "-----BEGIN … KEY …-----"
		// but a public key. 1: the body.
		re:     regexp.MustCompile(`^-----BEGIN ([A-Za-z0-9 ]{1,60})-----[ \t]*\r?\n((?s:.)*?)\r?\n-----END `),
		maxLen: 16 << 10,
		secret: func(c string, m []int) (int, int, bool) {
			label := strings.ToUpper(c[m[2]:m[3]])
			return m[4], m[5], !strings.Contains(label, "PUBLIC") && m[5]-m[4] >= 16
		},
	},
}

// credFileMaxLines and credFileMaxBytes bound the output of a command
// that shows a credential file read for its secrets.
const (
	credFileMaxLines = 64
	credFileMaxBytes = 8 << 10
)

// credFileCommands are the commands that print a file (their name and a
// blank); credFileCommandStart checks the rest of the line.
var credFileCommands = []string{"cat ", "head ", "tail ", "type ", "Get-Content "}

// credFileLine is a command line that prints one file: what a prompt and
// sudo leave, the command, its options (with a count: head -n 5), and
// the path, to the line's end. 1: the path.
var credFileLine = regexp.MustCompile(`^(?:cat|head|tail|more|less|bat|batcat|nl|type|Get-Content|gc)(?:[ \t]+-{1,2}[A-Za-z][A-Za-z0-9=-]*(?:[ \t]+[0-9]+)?)*[ \t]+["']?([^\s"'|;&<>]{1,256})["']?[ \t]*\r?$`)

// credFilePrompt is what may precede such a command on its line: nothing,
// or a shell prompt ("$ ", "# ", "% ", "> ", "user@host:~$ ", "PS C:\> "),
// then sudo.
var credFilePrompt = regexp.MustCompile(`^(?:[^\n]{0,80}?[$#%>][ \t]+)?(?:sudo[ \t]+(?:-[A-Za-z]+[ \t]+)*)?$`)

// credFileCommandStart accepts a command that prints a file whose name
// says it holds credentials (credFileName) when it is the line's command,
// and returns the line's start.
func credFileCommandStart(text string, p int) int {
	if p > 0 && text[p-1] != ' ' && text[p-1] != '\t' && text[p-1] != '\n' && text[p-1] != '>' && text[p-1] != '$' {
		return -1
	}
	ls := lineStartWithin(text, p, 128)
	le := lineEndWithin(text, p, 384)
	if ls < 0 || le < 0 || !credFilePrompt.MatchString(text[ls:p]) {
		return -1
	}
	m := credFileLine.FindStringSubmatch(text[p : p+le])
	if m == nil || !credFileName(m[1]) {
		return -1
	}
	return ls
}

// credFileHeaderStart accepts a comment line that names a credential file
// alone (# /etc/ppp/chap-secrets, // rsyncd.secrets), as a README or a
// configuration listing puts one above the file's lines, and returns the
// line's start.
func credFileHeaderStart(text string, p int) int {
	ls := lineStartWithin(text, p, 256)
	le := lineEndWithin(text, p, 256)
	if ls < 0 || le < 0 {
		return -1
	}
	line := strings.TrimRight(text[ls:p+le], " \t\r")
	rest := strings.TrimLeft(line, " \t")
	switch {
	case strings.HasPrefix(rest, "#"):
		rest = rest[1:]
	case strings.HasPrefix(rest, "//"), strings.HasPrefix(rest, "--"):
		rest = rest[2:]
	case strings.HasPrefix(rest, ";"):
		rest = rest[1:]
	default:
		return -1
	}
	rest = strings.TrimSpace(rest)
	// A path (/etc/ppp/chap-secrets) or a file name with its extension
	// (rsyncd.secrets); a comment of one word ("// Credentials") is none.
	if rest == "" || strings.ContainsAny(rest, " \t") || !credFilePathLike(rest) || !credFileName(rest) {
		return -1
	}
	return ls
}

// credFilePathLike reports whether s reads as a path (a '/' or '\' in it)
// or a file name with an extension ("rsyncd.secrets"; not "credentials.",
// a sentence's end).
func credFilePathLike(s string) bool {
	if strings.ContainsAny(s, `/\`) {
		return true
	}
	k := strings.LastIndexByte(s, '.')
	return k > 0 && k < len(s)-1
}

// credFileWords are the words of a file name that say it holds
// credentials (the name split at anything but a letter or a digit).
var credFileWords = map[string]bool{
	"secret": true, "secrets": true, "password": true, "passwords": true, "pass": true, "pw": true,
	"cred": true, "creds": true, "credential": true, "credentials": true, "auth": true,
	"login": true, "logins": true, "users": true, "accounts": true, "token": true, "tokens": true,
}

// credFileExts are the extensions such a file may have: none, or one that
// says nothing of a format other rules read (a .yaml or a .json file's
// keys are theirs; a .go file is code).
var credFileExts = map[string]bool{"": true, "txt": true, "secrets": true, "secret": true, "pass": true,
	"pw": true, "auth": true, "creds": true, "cred": true, "lst": true, "list": true, "dat": true}

// credFileName reports whether a path's last element names a file of
// credentials: a word of credFileWords, an extension of credFileExts;
// /etc/passwd (no passwords) is not one.
func credFileName(path string) bool {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	lower := strings.ToLower(base)
	ext := ""
	if k := strings.LastIndexByte(lower, '.'); k > 0 {
		ext = lower[k+1:]
	}
	if !credFileExts[ext] {
		return false
	}
	for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if credFileWords[w] {
			return true
		}
	}
	// pppd's chap-secrets and pap-secrets, OpenVPN's auth-user-pass.
	return false
}

// CredentialFileCommand reports whether command, one command line as a
// tool call runs it (a prompt and sudo before it are read as the
// contextfold-credential-file rule reads them; "cd DIR && " before it is
// passed over), prints a file whose name says it holds credentials (cat
// /etc/rsyncd.secrets, head chap-secrets, type auth.txt): its output,
// another message of the conversation (a tool result), is then that file's
// lines (CredentialFileOutput). Pure; O(len(command)), a line of 384 bytes
// at most read.
func CredentialFileCommand(command string) bool {
	c := strings.TrimSpace(command)
	for {
		// cd DIR && cat FILE: the cd prints nothing.
		k := strings.Index(c, "&&")
		if k < 0 || !strings.HasPrefix(c, "cd ") || strings.ContainsAny(c[:k], ";|\n") {
			break
		}
		c = strings.TrimSpace(c[k+2:])
	}
	if c == "" || strings.IndexByte(c, '\n') >= 0 || len(c) > 384 {
		return false
	}
	c += "\n"
	for _, a := range credFileCommands {
		for off := 0; off < len(c); {
			k := strings.Index(c[off:], a)
			if k < 0 {
				break
			}
			if credFileCommandStart(c, off+k) == 0 {
				return true
			}
			off += k + 1
		}
	}
	return false
}

// CredentialFileOutput returns the secrets of output read as what a
// CredentialFileCommand printed, as [start, end) byte offsets into output in
// order: the contextfold-credential-file rule's reading of the lines after
// its command line (USER:PASSWORD lines, the third field of chap-secrets
// lines, the last line of a token file, …), up to the first line that ends
// a command's output, 64 lines and 8 KiB at most. Code or a document gives
// none. Pure.
func CredentialFileOutput(output string) [][2]int {
	return credFileSecrets(output[:min(len(output), credFileMaxBytes)], []int{0, 0})
}

// lineNumberPrefix is what a viewer puts before a file's line: cat -n's
// number and tab, an editor tool's number and arrow.
var lineNumberPrefix = regexp.MustCompile(`^[ \t]*[0-9]{1,6}(?:\t|→)`)

// credFileSecrets returns the secrets in the lines after a credential
// file's command or header line (cand's first line): up to the first line
// that ends the file's text (credFileEnd), credFileMaxLines at most.
func credFileSecrets(cand string, m []int) [][2]int {
	type line struct {
		s, e   int // the content, after a line number and blanks
		fields [][2]int
	}
	var lines []line
	pos := m[1]
	for n := 0; n < credFileMaxLines && pos < len(cand); n++ {
		e := strings.IndexByte(cand[pos:], '\n')
		if e < 0 {
			if len(cand) == credFileMaxBytes {
				break // cut by maxLen: the line may go on
			}
			e = len(cand) - pos
		}
		raw := cand[pos : pos+e]
		ls := pos
		pos += e + 1
		if credFileEnd(raw) {
			break
		}
		if k := lineNumberPrefix.FindStringIndex(raw); k != nil {
			raw, ls = raw[k[1]:], ls+k[1]
		}
		t := strings.TrimRight(raw, " \t\r")
		lead := len(t) - len(strings.TrimLeft(t, " \t"))
		t = t[lead:]
		ls += lead
		if t == "" || t[0] == '#' || t[0] == ';' {
			if h := strings.TrimSpace(strings.TrimLeft(t, "#;")); len(lines) > 0 || n > 0 {
				if credFilePathLike(h) && !strings.ContainsAny(h, " \t") {
					break // the next file's header: its own candidate reads it
				}
			}
			continue
		}
		if credFileCode(t) {
			if len(lines) == 0 {
				return nil // code or a document, not a credential file's lines
			}
			break // the text after the file's (a JSON string's end)
		}
		l := line{s: ls, e: ls + len(t)}
		for i := 0; i < len(t); {
			for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
				i++
			}
			j := i
			for j < len(t) && t[j] != ' ' && t[j] != '\t' {
				j++
			}
			if j > i {
				l.fields = append(l.fields, [2]int{ls + i, ls + j})
			}
			i = j
		}
		lines = append(lines, l)
	}
	var out [][2]int
	add := func(s, e int) {
		v := cand[s:e]
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			s, e, v = s+1, e-1, v[1:len(v)-1]
		}
		if credFileValue(v) {
			out = append(out, [2]int{s, e})
		}
	}
	oneWord := len(lines) > 0 && len(lines) <= 2
	for _, l := range lines {
		if len(l.fields) != 1 || strings.IndexByte(cand[l.s:l.e], ':') > 0 {
			oneWord = false
		}
	}
	if oneWord {
		// A token file (one word), OpenVPN's auth-user-pass (the user
		// on the first line, the password on the second).
		l := lines[len(lines)-1]
		add(l.s, l.e)
		return out
	}
	for _, l := range lines {
		t := cand[l.s:l.e]
		if strings.Contains(t, "=") {
			continue // NAME=VALUE: the env rule's
		}
		switch {
		case len(l.fields) == 1:
			// USER:PASSWORD (rsyncd.secrets, a user list).
			if k := strings.IndexByte(t, ':'); k > 0 && k < 65 {
				add(l.s+k+1, l.e)
			}
		case len(l.fields) == 2:
			add(l.fields[1][0], l.fields[1][1])
		case len(l.fields) <= 6:
			// CLIENT SERVER SECRET [ADDRESSES] (chap-secrets,
			// pap-secrets), URL USER PASSWORD (davfs2).
			add(l.fields[2][0], l.fields[2][1])
		}
	}
	return out
}

// credFileCode reports whether a line reads as code rather than a
// credential file's: a call's parentheses, a line ending in a brace, a
// ';', a ',' or a continuation.
func credFileCode(t string) bool {
	if strings.IndexByte(t, '(') >= 0 && strings.IndexByte(t, ')') >= 0 {
		return true
	}
	switch t[len(t)-1] {
	case '{', '}', ';', ',', '\\':
		return true
	}
	return false
}

// credFileEnd reports whether a line ends the text a command printed: a
// shell prompt's line, a Markdown fence, a Python prompt, a line a
// process writes after the command ends.
func credFileEnd(line string) bool {
	t := strings.TrimLeft(line, " \t")
	if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") || strings.HasPrefix(t, "$ ") || t == "$" ||
		strings.HasPrefix(t, ">>> ") || strings.HasPrefix(t, "PS ") && strings.Contains(t, "> ") {
		return true
	}
	// user@host:~$ … and user@host:~# …
	if k := strings.IndexByte(t, '@'); k > 0 && k < 64 {
		if j := strings.IndexAny(t, "$#"); j > k && j < 128 && j+1 <= len(t) && (j+1 == len(t) || t[j+1] == ' ') &&
			strings.IndexByte(t[k:j], ':') >= 0 {
			return true
		}
	}
	return false
}

// credFileValue reports whether v, a field of a credential file's line,
// may be its secret: 4+ characters, not a placeholder, not an ordinary
// word, not '*' or '-' (pppd's "any"), an address or an e-mail address,
// and without quotes or brackets (code; a quoted secret is unquoted first).
func credFileValue(v string) bool {
	if len(v) < 4 || isPlaceholder(v) || plainWord(v) || v[0] == '*' || v[0] == '-' || strings.ContainsAny(v, "\"'`()[]{}<>") {
		return false // a quote or a bracket: code around the value
	}
	if strings.Trim(v, "0123456789.:") == "" { // an IPv4 address, a number
		return false
	}
	if k := strings.IndexByte(v, '@'); k > 0 && strings.IndexByte(v[k:], '.') > 0 && isEmailLike(v) {
		return false
	}
	return true
}

// isEmailLike reports whether v reads as name@domain.tld.
func isEmailLike(v string) bool {
	return emailLike.MatchString(v)
}

var emailLike = regexp.MustCompile(`^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$`)

// sqlMaxBytes bounds the statement (or pg_dump's data block) a SQL rule
// reads from its start.
const sqlMaxBytes = 64 << 10

// sqlSecretColumns returns, for a column list (a, "b", `c`), the indexes
// of the columns whose name is a secret's, and how many columns there are.
func sqlSecretColumns(cols string, sep byte) (idx []int, n int) {
	parts := strings.Split(cols, string(sep))
	for i, c := range parts {
		c = strings.Trim(strings.TrimSpace(c), "\"`[]")
		if c != "" && maybeSecretName(c) {
			idx = append(idx, i)
		}
	}
	return idx, len(parts)
}

// sqlName returns the name of column i of a column list.
func sqlName(cols string, i int) string {
	return strings.Trim(strings.TrimSpace(strings.Split(cols, ",")[i]), "\"`[]")
}

// sqlInsertSecrets returns the values, in the secret columns, of the
// tuples after INSERT … (COLUMNS) VALUES: string literals ('…', a quote
// doubled or escaped with a backslash inside, and "…"), or the first string literal of a call
// (crypt('pw', gen_salt('bf'))). A tuple whose count differs from the
// column list's ends the reading, as does anything but ',' and another
// tuple after one.
func sqlInsertSecrets(cand string, m []int) [][2]int {
	cols := cand[m[2]:m[3]]
	idx, n := sqlSecretColumns(cols, ',')
	if len(idx) == 0 {
		return nil
	}
	var out [][2]int
	pos := m[1] // after the first tuple's '('
	for {
		vals, end, ok := sqlTuple(cand, pos)
		if !ok || len(vals) != n {
			return out
		}
		for _, i := range idx {
			s, e := sqlLiteral(cand, vals[i][0], vals[i][1])
			if s >= 0 && acceptEnvSecret(sqlName(cols, i), cand[s:e]) {
				out = append(out, [2]int{s, e})
			}
		}
		pos = end
		for pos < len(cand) && isSpaceByte(cand[pos]) {
			pos++
		}
		if pos >= len(cand) || cand[pos] != ',' {
			return out
		}
		pos++
		for pos < len(cand) && isSpaceByte(cand[pos]) {
			pos++
		}
		if pos >= len(cand) || cand[pos] != '(' {
			return out
		}
		pos++
	}
}

// sqlTuple reads the values of a tuple from pos (after its '(') to its
// ')': each value's span, and where the tuple ends (after ')').
func sqlTuple(c string, pos int) (vals [][2]int, end int, ok bool) {
	start, depth := pos, 0
	for i := pos; i < len(c); i++ {
		switch c[i] {
		case '\'', '"':
			j, ok := sqlQuoteEnd(c, i)
			if !ok {
				return nil, 0, false
			}
			i = j - 1
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
				continue
			}
			vals = append(vals, [2]int{start, i})
			return vals, i + 1, true
		case ',':
			if depth == 0 {
				vals = append(vals, [2]int{start, i})
				start = i + 1
			}
		case ';':
			if depth == 0 {
				return nil, 0, false
			}
		}
	}
	return nil, 0, false
}

// sqlQuoteEnd returns the end (after the closing quote) of the string
// literal whose opening quote is at i: a doubled quote or a backslash
// escape continues it.
func sqlQuoteEnd(c string, i int) (int, bool) {
	q := c[i]
	for j := i + 1; j < len(c); j++ {
		switch c[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(c) && c[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

// sqlLiteral returns the inside of the first string literal in c[s:e] (a
// value, or a call holding one), or -1.
func sqlLiteral(c string, s, e int) (int, int) {
	for i := s; i < e; i++ {
		if c[i] == '\'' || c[i] == '"' {
			j, ok := sqlQuoteEnd(c[:e], i)
			if !ok {
				return -1, -1
			}
			return i + 1, j - 1
		}
	}
	return -1, -1
}

// sqlCopySecrets returns the values, in the secret columns, of the rows
// of pg_dump's COPY … FROM stdin block: tab-separated lines up to "\."
// ("\N" is NULL).
func sqlCopySecrets(cand string, m []int) [][2]int {
	cols := cand[m[2]:m[3]]
	idx, n := sqlSecretColumns(cols, ',')
	if len(idx) == 0 {
		return nil
	}
	var out [][2]int
	pos := m[1]
	for pos < len(cand) {
		e := strings.IndexByte(cand[pos:], '\n')
		if e < 0 {
			if len(cand) == sqlMaxBytes {
				break
			}
			e = len(cand) - pos
		}
		line := strings.TrimRight(cand[pos:pos+e], "\r")
		if line == `\.` {
			break
		}
		cells := strings.Split(line, "\t")
		if len(cells) != n {
			break
		}
		off := pos
		for i, cell := range cells {
			for _, k := range idx {
				if k == i && cell != `\N` && acceptEnvSecret(sqlName(cols, i), cell) {
					out = append(out, [2]int{off, off + len(cell)})
				}
			}
			off += len(cell) + 1
		}
		pos += e + 1
	}
	return out
}

// cdataMax bounds the CDATA section read as a secret (bytes).
const cdataMax = 1024

// cdataStart accepts a CDATA section right after an element's start tag
// (blanks between allowed) whose name may be a secret's, and returns
// where the tag starts.
func cdataStart(text string, p int) int {
	// The section must close within cdataMax, before another opens.
	body := text[p+9 : min(len(text), p+9+cdataMax)]
	k := strings.Index(body, "]]>")
	if k < 0 || strings.Contains(body[:k], "<![CDATA[") {
		return -1
	}
	j := p
	for j > 0 && p-j < 16 && isSpaceByte(text[j-1]) {
		j--
	}
	if j == 0 || text[j-1] != '>' {
		return -1
	}
	k = j - 1
	for k > 0 && j-k < 128 && (isWordByte(text[k-1]) || text[k-1] == '.' || text[k-1] == '-' || text[k-1] == ':') {
		k--
	}
	if k == 0 || text[k-1] != '<' || k == j-1 {
		return -1
	}
	name := text[k : j-1]
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" || !maybeSecretName(name) {
		return -1
	}
	return k - 1
}

// tripleQuoteStart accepts the opening triple quote of a value after
// "NAME =" (or "NAME:") on its line, the name one that may be a secret's,
// and returns the line's start.
func tripleQuoteStart(text string, p int) int {
	ls := lineStartWithin(text, p, 160)
	if ls < 0 {
		return -1
	}
	before := strings.TrimRight(text[ls:p], " \t")
	if before == "" || (before[len(before)-1] != '=' && before[len(before)-1] != ':') {
		return -1
	}
	name := strings.Trim(strings.TrimSpace(before[:len(before)-1]), `"`)
	if name == "" || !maybeSecretName(name) {
		return -1
	}
	return ls
}

// tripleQuoteSecret returns the value of NAME = """VALUE""", its blanks
// and line breaks at either end left out, when the name and the value are
// a secret's as in NAME=VALUE.
func tripleQuoteSecret(c string, m []int) (int, int, bool) {
	name := strings.Trim(c[m[2]:m[3]], `"`)
	s, e := m[4], m[5]
	if s < 0 {
		s, e = m[6], m[7]
	}
	for s < e && isSpaceByte(c[s]) {
		s++
	}
	for e > s && isSpaceByte(c[e-1]) {
		e--
	}
	return s, e, acceptEnvSecret(name, c[s:e])
}

// wifiPassword returns the value of the P: field of a Wi-Fi QR code's
// fields (m's group 1), unless it is empty or a placeholder.
func wifiPassword(c string, m []int) (int, int, bool) {
	i := m[2]
	for i < m[3] {
		j := i + 2
		for j < m[3] && c[j] != ';' {
			if c[j] == '\\' {
				j++
			}
			j++
		}
		if (c[i] == 'P' || c[i] == 'p') && c[i+1] == ':' {
			v := c[i+2 : j]
			return i + 2, j, v != "" && !isPlaceholder(v)
		}
		i = j + 1
	}
	return 0, 0, false
}

// wrappedFindings returns, for each finding of fs that ends where its
// line ends, the next line when it reads as the rest of the same token a
// terminal wrapped there: one run of token characters (letters, digits,
// '+', '/', '=', '_', '-') of 6 to 512 bytes, alone on its line, with a
// digit or mixed case, not an ordinary word, a snake_case identifier or a
// run of one character or a UUID (which stays where it stands alone). A line with a blank, a '.', a ':' or an '=' but
// base64's padding is a line of its own (KEY=… then DEBUG=1, a version, a
// sentence).
func wrappedFindings(text string, fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		e := f.End
		if e >= len(text) || f.End-f.Start < 8 {
			continue
		}
		if text[e] == '\r' && e+1 < len(text) {
			e++
		}
		if text[e] != '\n' {
			continue
		}
		// The finding must be the end of a token (no blank just before
		// it: a value, not a line a rule took whole).
		if c := text[f.End-1]; c == ' ' || c == '\t' {
			continue
		}
		s := e + 1
		n := 0
		for s+n < len(text) && n <= 512 && wrappedByte(text[s+n]) {
			n++
		}
		if n < 6 || n > 512 {
			continue
		}
		end := s + n
		if end < len(text) && text[end] != '\n' && text[end] != '\r' {
			continue
		}
		v := text[s:end]
		if k := strings.IndexByte(v, '='); k >= 0 && strings.Trim(v[k:], "=") != "" {
			continue // NAME=VALUE; base64's padding ends a token
		}
		if plainWord(v) || snakeIdentifier(v) || isPlaceholder(v) || !wrappedRest(v) || uuidLike.MatchString(v) {
			continue
		}
		out = append(out, Finding{RuleID: f.RuleID, Start: s, End: end})
	}
	return out
}

func wrappedByte(c byte) bool {
	return isWordByte(c) || c == '+' || c == '/' || c == '=' || c == '-'
}

// wrappedRest reports whether v has a digit, or upper- and lower-case
// letters both, as a token's rest has.
func wrappedRest(v string) bool {
	var d, u, l bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			d = true
		case c >= 'A' && c <= 'Z':
			u = true
		case c >= 'a' && c <= 'z':
			l = true
		}
	}
	return d || u && l
}

// makeAssignStart accepts the ":=" of NAME := VALUE where the name
// starts a word (after a blank, a quote or the text's start) and returns
// where the name starts.
func makeAssignStart(text string, p int) int {
	j := p
	for j > 0 && p-j < 16 && (text[j-1] == ' ' || text[j-1] == '\t') {
		j--
	}
	if j > 0 && text[j-1] == ':' { // ::=
		j--
	}
	k := j
	for k > 0 && j-k < 128 && (isWordByte(text[k-1])) {
		k--
	}
	if k == j {
		return -1
	}
	if k > 0 && !isSpaceByte(text[k-1]) && text[k-1] != '"' && text[k-1] != '\'' {
		return -1
	}
	return k
}

// printedMoreStart accepts, as printedSecretStart does, a command that
// prints a secret alone when it is the command of a shell prompt's line:
// terraform output -raw|-json NAME and pulumi config get NAME (NAME a
// secret's), pulumi stack output NAME --show-secrets, heroku config:get
// NAME, doppler secrets get NAME --plain, gh auth token, aws ecr
// get-login-password, heroku auth:token and vault print token. It returns
// the line's start.
func printedMoreStart(text string, p int) int {
	// The anchors are the commands' rarer parts: back to the word's start.
	for k := 0; k < 16 && p > 0 && !isSpaceByte(text[p-1]) && text[p-1] != '$' && text[p-1] != '>'; k++ {
		p--
	}
	ls := lineStartWithin(text, p, 256)
	le := lineEndWithin(text, p, 512)
	if ls < 0 || le < 0 || !printedPrompt.MatchString(text[ls:p]) {
		return -1
	}
	cmd := strings.TrimRight(text[p:p+le], " \t\r")
	fs := strings.Fields(cmd)
	named := func(i int) bool { // the first argument after fs[:i] that is no option names a secret
		for _, f := range fs[min(i, len(fs)):] {
			if f[0] != '-' {
				// As NAME=VALUE names a secret (vpc_id does not).
				return acceptEnvSecret(strings.Trim(f, `"'`), "Xx0Xx0Xx0Xx0Xx0Xx0")
			}
		}
		return false
	}
	ok := false
	switch {
	case strings.HasPrefix(cmd, "terraform output"):
		ok = named(2) && !strings.Contains(cmd, "-json")
	case strings.HasPrefix(cmd, "pulumi config get"):
		ok = named(3)
	case strings.HasPrefix(cmd, "pulumi stack output"):
		ok = named(3) && strings.Contains(cmd, "--show-secrets")
	case strings.HasPrefix(cmd, "config:get"):
		ok = named(1)
	case strings.HasPrefix(cmd, "doppler secrets get"):
		ok = strings.Contains(cmd, "--plain")
	case strings.HasPrefix(cmd, "gh auth token"), strings.HasPrefix(cmd, "get-login-password"),
		strings.HasPrefix(cmd, "auth:token"), strings.HasPrefix(cmd, "vault print token"):
		ok = true
	}
	if !ok {
		return -1
	}
	return ls
}

// namedCLIForms are the commands of named.go's contextfold-cli-password
// rule, each up to where its password starts: MinIO's mc alias set (and
// mc config host add) NAME URL ACCESS SECRET, FreeRDP's /p:, curl
// --oauth2-bearer, HTTPie's -a/--auth USER:PASSWORD,
// bitcoin-cli walletpassphrase, SQL Server's sp_addlogin and sp_password.
var namedCLIForms = []string{
	`mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+`,
	`[xw]?freerdp[0-9]?[^\n;&|]{0,300}?[ \t][/-]p:`,
	`oauth2-bearer(?:[ \t]+|=)`,
	`https?(?:[ \t][^\n;&|]{0,300}?)?[ \t](?:-a|--auth)(?:[ \t]+|=)["']?[^\s:"']{1,64}:`,
	`walletpassphrase[ \t]+`,
	`sp_(?:addlogin|password)[ \t]+(?:@[a-z]+[ \t]*=[ \t]*)?N?'[^'\n]*'[ \t]*,[ \t]*(?:@[a-z]+[ \t]*=[ \t]*)?N?`,
}

// samePromptStart accepts a word for a secret in a terminal prompt
// (Enter, New, Retype, Confirm, Verify, Old, Current, Same before it:
// "Enter passphrase", "Retype new password") and returns where the word
// starts.
func samePromptStart(text string, p int) int {
	if p == 0 || text[p-1] != 'p' && text[p-1] != 'P' {
		return -1
	}
	w := p - 1 // the word's start: "assword" and "assphrase" lack their p
	lower := strings.ToLower(text[max(0, w-24):w])
	for _, v := range []string{"enter ", "new ", "retype ", "re-enter ", "confirm ", "verify ", "old ", "current ", "same "} {
		if i := len(lower) - len(v); strings.HasSuffix(lower, v) && (i == 0 || !isWordByte(lower[i-1]) || lower[i-1] == '_') {
			return w
		}
	}
	return -1
}

// heredocReaders are the commands whose here-document lines are
// passwords (passwd asks twice) or USER:PASSWORD pairs (chpasswd).
var heredocReaders = regexp.MustCompile(`(?:^|[^A-Za-z0-9])(?:sudo[ \t]+)?(?:passwd|chpasswd|smbpasswd|htpasswd[ \t]+-i|[a-z-]+[ \t]+[^\n]*--password-stdin|vncpasswd|mysql_config_editor)\b`)

// heredocStart accepts the "<<" of a here-document fed to one of
// heredocReaders and returns the line's start.
func heredocStart(text string, p int) int {
	ls := lineStartWithin(text, p, 256)
	if ls < 0 || p+2 < len(text) && text[p+2] == '<' { // <<< is a here-string
		return -1
	}
	if !heredocReaders.MatchString(text[ls:p]) {
		return -1
	}
	return ls
}

// heredocSecrets returns the lines of the here-document whose delimiter
// is m's group 1, up to the delimiter's line: each line whole, or after
// its first ':' for chpasswd's USER:PASSWORD.
func heredocSecrets(cand string, m []int) [][2]int {
	delim := cand[m[2]:m[3]]
	chpasswd := strings.Contains(cand[:m[1]], "chpasswd")
	var out [][2]int
	pos := m[1]
	for n := 0; n < 16 && pos < len(cand); n++ {
		e := strings.IndexByte(cand[pos:], '\n')
		if e < 0 {
			e = len(cand) - pos
		}
		line := strings.TrimRight(cand[pos:pos+e], "\r")
		if strings.TrimLeft(line, "\t") == delim {
			return out
		}
		s, t := pos, strings.TrimLeft(line, " \t")
		s += len(line) - len(t)
		if chpasswd {
			if k := strings.IndexByte(t, ':'); k > 0 {
				s, t = s+k+1, t[k+1:]
			}
		}
		if len(t) >= 4 && !isPlaceholder(t) && !strings.ContainsAny(t, " \t") {
			out = append(out, [2]int{s, s + len(t)})
		}
		pos += e + 1
	}
	return nil // no delimiter line: not a here-document we can read
}

// keyBlockStart accepts a "-----BEGIN " at a line's start (blanks or a
// quote before it allowed) whose label names a key or a secret but not a
// private key the PEM rule reads ("PRIVATE KEY") nor a public key or a
// certificate.
func keyBlockStart(text string, p int) int {
	e := strings.Index(text[p+11:min(len(text), p+11+64)], "-----")
	if e < 0 {
		return -1
	}
	label := strings.ToUpper(text[p+11 : p+11+e])
	if strings.Contains(label, "PRIVATE KEY") || strings.Contains(label, "PUBLIC") || strings.Contains(label, "CERTIFICATE") {
		return -1
	}
	if !strings.Contains(label, "KEY") && !strings.Contains(label, "SECRET") {
		return -1
	}
	return p
}

// dslSecretStart accepts the end of a secret's name followed by a blank
// and a quote when the name starts its line (blanks before it) and
// returns the line's start.
func dslSecretStart(text string, p int) int {
	ls := lineStartWithin(text, p, 128)
	if ls < 0 {
		return -1
	}
	head := strings.TrimLeft(text[ls:p], " \t")
	for i := 0; i < len(head); i++ {
		if !isWordByte(head[i]) {
			return -1
		}
	}
	return ls
}

// hostTokenValues returns the string values of the members of a
// host-keyed token object ("github.com": "TOKEN"), a value of 8+
// characters that is not a placeholder; a nested object's (GitLab's
// {"username": …, "token": …}) are the keyed rule's.
var hostTokenMember = regexp.MustCompile(`"[A-Za-z0-9.:-]{1,253}"[ \t\r\n]*:[ \t\r\n]*"([^"\\\n]{8,512})"`)

func hostTokenValues(cand string, m []int) [][2]int {
	var out [][2]int
	body := cand[m[2]:m[3]]
	for _, v := range hostTokenMember.FindAllStringSubmatchIndex(body, -1) {
		if !isPlaceholder(body[v[2]:v[3]]) {
			out = append(out, [2]int{m[2] + v[2], m[2] + v[3]})
		}
	}
	return out
}

// modulePath matches a value that starts as a module's or a URL's path
// (github.com/org/repo): Go's import alias hcltoken "github.com/…/token"
// is no secret.
var modulePath = regexp.MustCompile(`^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/`)

// uuidLike matches a UUID in its canonical form.
var uuidLike = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// sqlVerbStart accepts the rest of INSERT or REPLACE (the anchors leave
// out their first letter, a pair of letters common in any text) when the
// verb starts a word, and returns where it starts.
func sqlVerbStart(text string, p int) int {
	if p == 0 {
		return -1
	}
	switch text[p-1] {
	case 'I', 'i', 'R', 'r':
		return wordStart(text, p-1)
	}
	return -1
}
