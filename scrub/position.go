package scrub

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// Rules for secrets that only their position marks: no name sits next to
// the value, but where it stands says what it is (a protocol's login
// line, the answer an expect script sends to a password prompt, a cell
// under a CSV header's password column, a Kubernetes Secret's data), and
// a URL password holding '/'. They join extraRules (init below) and are
// run the same way.
//
//   - contextfold-url-password (second form): a URL password holding an
//     unescaped '/' (postgres://app:s3cr/et@db:5432/x). By the URL
//     standard the authority ends at the first '/', but people paste such
//     URLs; when an '@' and a host follow before a blank or a quote, the
//     whole "user:…@" span is user information. A port (all digits before
//     the first '/': http://host:8080/a/b@c.example) is not a password.
//   - contextfold-protocol-auth: the credential of a mail or file transfer
//     protocol's login as a session transcript shows it: SMTP's and IMAP's
//     AUTH PLAIN / AUTHENTICATE PLAIN BASE64 (inline or on the line after
//     the server's 334 / +), the line answering a server's base64
//     "Password:" prompt (334 UGFzc3dvcmQ6) in AUTH LOGIN, FTP's and
//     POP3's PASS VALUE after a USER line, IMAP's "TAG LOGIN USER VALUE",
//     and IRC's NickServ IDENTIFY [ACCOUNT] VALUE.
//   - contextfold-expect-secret: what an expect script (or Python's
//     pexpect) sends right after a prompt for a password, a passphrase, a
//     PIN, a token or a secret: expect "*assword*" then send "VALUE\r",
//     "Password:" { send "VALUE\n" }, child.expect('Password:') then
//     child.sendline('VALUE').
//   - contextfold-csv-secret: the cells of a CSV or TSV listing under a
//     header cell that names a secret (password, api_key, token, Secret):
//     every row after the header with as many cells as it.
//   - contextfold-pin: an all-digit PIN or PUK (4 to 12 digits) after its
//     label (PIN: 4821, the pin code is 739201, YUBIKEY_PIN=123456).
//   - contextfold-k8s-secret: every value under data: or stringData: of a
//     Kubernetes Secret (kind: Secret, YAML or JSON): its keys can be any
//     name (root, hmac, connection), its values are secrets by definition.
//   - contextfold-prompt-secret: a value typed after a prompt that names a
//     secret and shows a default in brackets (aws configure's "AWS Secret
//     Access Key [None]: VALUE").
//   - contextfold-cli-password (more forms): snmpwalk and the other Net-SNMP
//     tools' -c COMMUNITY (-A and -X for v3), Windows' net user USER
//     PASSWORD and cmdkey /pass:PASSWORD, gh secret set NAME --body VALUE,
//     macOS' security add-generic-password … -w PASSWORD, htpasswd -nb
//     USER PASSWORD, vault login TOKEN; an ODBC connection string's
//     PWD={…} and strongSwan's ipsec.secrets ": PSK|XAUTH|EAP "VALUE"".
//   - contextfold-keyed-secret reads LDIF's base64 form too
//     (userPassword:: BASE64, extra.go).

func init() {
	extraRules = append(extraRules, positionRules...)
}

var positionRules = []extraRule{
	{
		id:      "contextfold-url-password",
		anchors: []string{"://"},
		begin:   slashURLStart,
		// 1: the password, holding a '/' and no '@' or '?'; 2: the
		// host after the '@', which a port, a path, a query, a blank, a
		// quote or the end of the text ends.
		re:      regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@'"\\<>]*:([^\s'"\\<>@?/]*/[^\s'"\\<>@?]*)@([A-Za-z0-9][A-Za-z0-9.-]*)(?::[0-9]{1,5})?(?:[/?#\s'"\\<>,;)\]}]|$)`),
		maxLen:  2048,
		oneLine: true,
		secret:  slashURLPassword,
	},
	{
		id:      "contextfold-protocol-auth",
		anchors: []string{"PLAIN", "plain", "Plain"},
		begin:   saslPlainStart,
		// AUTH PLAIN / AUTHENTICATE PLAIN, the credential inline or on
		// the line after the server's "334" or "+" (a client prefix such
		// as "C:", "->", ">" before it). 1: inline, 2: next line.
		re:     regexp.MustCompile(`^(?i:plain)(?:[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?:[^A-Za-z0-9+/=]|$)|[ \t]*\r?\n[^\n]{0,40}?(?:334|\+)[ \t]*\r?\n` + clientPrefix + `([A-Za-z0-9+/]{8,}={0,2})[ \t]*(?:\r?\n|$))`),
		maxLen: 512,
		secret: saslPlainSecret,
	},
	{
		id:      "contextfold-protocol-auth",
		anchors: []string{"UGFzc3dvcmQ6", "cGFzc3dvcmQ6"},
		begin:   func(_ string, p int) int { return p },
		// AUTH LOGIN: the server's base64 "Password:" prompt, then the
		// client's line, the password in base64. 1: it.
		re:     regexp.MustCompile(`^[Uc]GFzc3dvcmQ6[ \t]*\r?\n` + clientPrefix + `([A-Za-z0-9+/]{4,}={0,2})[ \t]*(?:\r?\n|$)`),
		maxLen: 512,
		secret: func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-protocol-auth",
		anchors: []string{"PASS "},
		begin:   ftpPassStart,
		// FTP's and POP3's PASS VALUE on a line of its own (after a client
		// prefix), a USER line before it (ftpPassStart). 1: the value.
		re:      regexp.MustCompile(`^PASS[ \t]+([^\s]+)[ \t]*(?:\r?\n|$)`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 3 && !isPlaceholder(v)
		},
	},
	{
		id:      "contextfold-protocol-auth",
		anchors: []string{" LOGIN "},
		begin:   imapLoginStart,
		// IMAP's TAG LOGIN USER PASSWORD, a line of its own. 1: the user,
		// 2: the password (quoted or an atom); an ordinary word
		// (plainWord: "ID LOGIN EMAIL STATUS", a table's header) is none.
		re:      regexp.MustCompile(`^[A-Za-z0-9.]{1,12}[ \t]+LOGIN[ \t]+("[^"\r\n]*"|[^\s"]+)[ \t]+("(?:[^"\\\r\n]|\\.)*"|[^\s"]+)[ \t]*(?:\r?\n|$)`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := strings.Trim(c[m[4]:m[5]], `"`)
			return m[4], m[5], len(v) >= 3 && !isPlaceholder(v) && !plainWord(v)
		},
	},
	{
		id:      "contextfold-protocol-auth",
		anchors: []string{"NickServ", "nickserv", "NICKSERV"},
		begin:   wordStart,
		// IRC: /msg NickServ IDENTIFY [ACCOUNT] PASSWORD. 1: the first
		// word, 2: the second; as Redis's AUTH [USER] PASSWORD, both are
		// redacted when the first reads as an account name.
		re:      regexp.MustCompile(`^(?i:nickserv)[ \t]+(?i:identify)[ \t]+([^\s"'\\]+)(?:[ \t]+([^\s"'\\]+))?`),
		maxLen:  256,
		oneLine: true,
		secret:  redisAuthSecret,
	},
	{
		id:      "contextfold-expect-secret",
		anchors: []string{"send"},
		begin:   expectSendStart,
		// send / exp_send / sendline / send_line with a string literal
		// (Tcl's "…" or Python's '…' / "…"), after a prompt for a secret
		// (expectSendStart). 1: double-quoted, 2: single-quoted; a
		// decoded view's carriage return or line feed (a \\r escaped
		// twice) before the closing quote is left out.
		re:      regexp.MustCompile(`^(?:send|exp_send|sendline|send_line)(?:[ \t]+--)?[ \t]*\(?[ \t]*(?:"((?:[^"\\\r\n]|\\[^\r\n])*)[\r\n]*"|'((?:[^'\\\r\n]|\\[^\r\n])*)[\r\n]*')`),
		maxLen:  512,
		oneLine: true,
		secret:  expectSecret,
	},
	{
		id:      "contextfold-csv-secret",
		anchors: csvSecretAnchors,
		begin:   csvHeaderStart,
		// A CSV or TSV header naming a secret column: the header line; the
		// cells below it are csvSecretCells'.
		re:     regexp.MustCompile(`^[^\n]*\n`),
		maxLen: 64 << 10,
		multi:  csvSecretCells,
	},
	{
		id:      "contextfold-pin",
		anchors: []string{"pin", "PIN", "Pin", "puk", "PUK"},
		begin:   pinStart,
		// PIN: 4821, PIN=4821, pin code is 739201, YUBIKEY_PIN=123456.
		// 1: the digits.
		re:      regexp.MustCompile("^_*(?:[A-Za-z0-9]+_)*(?i:pin|puk)[12]?(?:[ \\t]+(?i:code|number))?(?:[ \\t]*[:=][ \\t]*|[ \\t]+(?i:is|was|is now)(?:[ \\t]*:)?[ \\t]+)[\"'`]?([0-9]{4,12})(?:[^0-9A-Za-z.:/-]|[.:/-](?:[^0-9]|$)|$)"),
		maxLen:  128,
		oneLine: true,
		secret:  func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-k8s-secret",
		anchors: []string{"kind: Secret"},
		begin:   k8sYAMLSecretStart,
		// A Kubernetes Secret in YAML: the text from its document's start
		// (where k8sYAMLSecretStart puts the candidate) to its end; the
		// values are k8sYAMLSecretValues'.
		re:     regexp.MustCompile(`^`),
		maxLen: 64 << 10,
		multi:  k8sYAMLSecretValues,
	},
	{
		id:      "contextfold-k8s-secret",
		anchors: []string{`"kind": "Secret"`, `"kind":"Secret"`},
		begin:   k8sJSONSecretStart,
		// The same in JSON (kubectl get secret -o json puts "data"
		// before "kind"): the candidate starts at the object's '{'.
		re:     regexp.MustCompile(`^\{`),
		maxLen: 64 << 10,
		multi:  k8sJSONSecretValues,
	},
	{
		id:      "contextfold-prompt-secret",
		anchors: []string{"]:"},
		begin:   promptLineStart,
		// LABEL [DEFAULT]: VALUE, the label naming a secret
		// (promptLineStart). 1: the value.
		re:      regexp.MustCompile(`^[^\n]*?\[[^\]\n]*\]:[ \t]*([^\s"'\\]+)`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			return m[2], m[3], labelValue(c[m[2]:m[3]]) || len(c[m[2]:m[3]]) >= 8 && hasLetterAndDigit(c[m[2]:m[3]]) && !isPlaceholder(c[m[2]:m[3]])
		},
	},
	{
		id:      "contextfold-cli-password",
		anchors: []string{"snmp", "net ", "net\t", "cmdkey", "gh ", "gh\t", "security ", "htpasswd", "vault ", "aws ", "az "},
		begin:   wordStart,
		// Positional and option passwords of more commands
		// (cliPositionalForms). 1: single-quoted, 2: double-quoted, 3:
		// bare; vault login's key=value pairs (method=userpass,
		// token=…) are not the token (lowerAssignment).
		re:     regexp.MustCompile(`^(?:` + strings.Join(cliPositionalForms, "|") + `)(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"]+))`),
		maxLen: 512,
		secret: func(c string, m []int) (int, int, bool) {
			s, e, ok := cliPassword(c, m)
			if ok && strings.HasPrefix(c, "vault") && (e-s < 8 || !hasLetterAndDigit(c[s:e])) {
				return 0, 0, false // vault login's token: a word is a stray argument
			}
			return s, e, ok && c[s] != '/' && c[s] != '*' && e-s >= 3 && !lowerAssignment.MatchString(c[s:e])
		},
	},
	{
		id:      "contextfold-cli-password",
		anchors: []string{"PWD", "Pwd", "pwd", "PASSWORD", "Password", "password"},
		begin:   wordStart,
		// An ODBC connection string's braced value (PWD={p;w}: a value
		// holding ';' is braced, '}' doubled). 1: it.
		re:      regexp.MustCompile(`^(?i:pwd|password)[ \t]*=[ \t]*\{((?:[^{}\r\n]|\}\})+)\}`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 3 && !isPlaceholder(v)
		},
	},
	{
		id:      "contextfold-cli-password",
		anchors: []string{"PSK", "XAUTH", "EAP"},
		begin:   ipsecSecretStart,
		// strongSwan's and Libreswan's ipsec.secrets: SELECTORS : PSK
		// "VALUE" (also XAUTH, EAP). 1: double-quoted, 2: single-quoted,
		// 3: bare (0x… or 0s… encodings included).
		re:      regexp.MustCompile(`^(?:PSK|XAUTH|EAP)[ \t]+(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"'#]+))`),
		maxLen:  512,
		oneLine: true,
		secret: func(_ string, m []int) (int, int, bool) {
			s, e, ok := valueGroup(m, 1, 3)
			return s, e, ok && e-s >= 3
		},
	},
	{
		id:      "contextfold-stdin-password",
		anchors: []string{"echo", "printf"},
		begin:   wordStart,
		// A secret piped into a command that stores or sets it from
		// standard input: docker/podman secret create NAME -, gcloud
		// secrets create|versions add --data-file=-, gh secret set NAME,
		// wrangler secret put, kubectl create secret … /dev/stdin, and
		// passwd (echo -e "PW\nPW" | passwd USER). 1: single-quoted, 2:
		// double-quoted, 3: bare.
		re:     regexp.MustCompile(`^(?:echo(?:[ \t]+-[neE]+)*|printf(?:[ \t]+(?:'%s[^']*'|"%s[^"]*"|%s))?)[ \t]+(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"|;&]+))[ \t]*\|[ \t]*(?:(?:sudo[ \t]+)?(?:docker|podman)[ \t]+secret[ \t]+create|gcloud[ \t]+secrets[ \t]+(?:create|versions[ \t]+add)|gh[ \t]+secret[ \t]+set|(?:npx[ \t]+)?wrangler[ \t]+secret[ \t]+put|kubectl[ \t]+create[ \t]+secret[^\n;&|]*/dev/stdin|(?:sudo[ \t]+)?passwd(?:[ \t]|$))`),
		maxLen: 1024,
		secret: cliPassword,
	},
	{
		id:      "contextfold-stdin-password",
		anchors: []string{"<<<"},
		begin:   func(text string, p int) int { return lineStartWithin(text, p, 1024) },
		// A here-string into the same readers (chpasswd <<< 'USER:PW',
		// passwd --stdin USER <<< PW, docker login --password-stdin <<<
		// PW, sudo -S … <<< PW). 1: single-quoted, 2: double-quoted, 3:
		// bare.
		re:      regexp.MustCompile(`^[^\n]*?(?:chpasswd|--pass(?:word)?-stdin|passwd[ \t]+--stdin|sudo(?:[ \t]+-[A-Za-z]+)*?[ \t]+-[A-Za-z]*S|secret[ \t]+(?:create|set|put))[^\n<]*<<<[ \t]*(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"]+))`),
		maxLen:  1024,
		oneLine: true,
		secret:  cliPassword,
	},
	{
		id:      "contextfold-printed-secret",
		anchors: printedSecretAnchors,
		begin:   printedSecretStart,
		// The output of a command that prints a secret alone, on the
		// line after the command (printedSecretStart): 1: that line's one
		// word.
		re:     regexp.MustCompile(`^[^\n]*\n[ \t]*([^\s]+)[ \t]*(?:\r?\n|$)`),
		maxLen: 2048,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 4 && !isPlaceholder(v) && v[0] != '$' && !strings.HasPrefix(v, "Error")
		},
	},
	{
		id:      "contextfold-flag-secret",
		anchors: []string{"-password", "-passwd", "-passphrase", "-token", "-secret", "-apikey", "-api-key", "-api_key", "-pass "},
		begin:   dashFlagStart,
		// A Go-style option with one dash (-token VALUE, -password
		// 'VALUE'), vetted as --name VALUE. 1: name; value: 2
		// double-quoted, 3 single-quoted, 4 bare.
		re:      regexp.MustCompile(`^-([A-Za-z][A-Za-z0-9_.-]*)[ \t]+(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'\\;&|` + "`" + `]+))`),
		maxLen:  1024,
		secret:  flagSecret,
		oneLine: true,
	},
}

// dashFlagStart accepts a one-dash option after a blank (not "--").
func dashFlagStart(text string, p int) int {
	if p == 0 || text[p-1] != ' ' && text[p-1] != '\t' {
		return -1
	}
	return p
}

// printedSecretAnchors are the commands whose output is a secret alone
// (printedSecretStart).
var printedSecretAnchors = []string{"op read", "op item get", "pass show", "gopass show", "vault kv get", "vault read",
	"secretsmanager get-secret-value", "secrets versions access", "keyvault secret show", "find-generic-password",
	"find-internet-password", "base64 -d", "base64 --decode", "openssl rand"}

// printedSecretStart accepts a command that prints a secret alone when it
// is the command of a shell prompt's line ("$ ", "# ", "% ", "> ", or the
// line's start) and asks for the secret itself: op read; op item get
// --fields; pass and gopass show; vault kv get or read -field=; aws
// secretsmanager get-secret-value --output text; gcloud secrets versions
// access; az keyvault secret show -o tsv; security find-*-password -w;
// base64 -d of a Kubernetes Secret's field (kubectl get secret … |);
// openssl rand (a secret made). It returns the line's start.
func printedSecretStart(text string, p int) int {
	ls := lineStartWithin(text, p, 256)
	le := lineEndWithin(text, p, 1024)
	if ls < 0 || le < 0 {
		return -1
	}
	line := text[ls : p+le]
	if !printedPrompt.MatchString(text[ls:p]) && !strings.Contains(text[ls:p], "kubectl") {
		return -1
	}
	cmd := text[p : p+le]
	ok := false
	switch {
	case strings.HasPrefix(cmd, "op read"), strings.HasPrefix(cmd, "pass show"), strings.HasPrefix(cmd, "gopass show"),
		strings.HasPrefix(cmd, "secrets versions access"), strings.HasPrefix(cmd, "openssl rand"):
		ok = true
	case strings.HasPrefix(cmd, "op item get"):
		ok = strings.Contains(cmd, "--field")
	case strings.HasPrefix(cmd, "vault"):
		ok = strings.Contains(cmd, "-field=") || strings.Contains(cmd, "-field ")
	case strings.HasPrefix(cmd, "secretsmanager"):
		ok = strings.Contains(cmd, "text")
	case strings.HasPrefix(cmd, "keyvault"):
		ok = strings.Contains(cmd, "tsv")
	case strings.HasPrefix(cmd, "find-"):
		ok = strings.Contains(cmd, " -w")
	case strings.HasPrefix(cmd, "base64"):
		ok = strings.Contains(line, "kubectl") && strings.Contains(line, "secret")
	}
	if !ok {
		return -1
	}
	return ls
}

// printedPrompt is what may precede a command on its line: a shell
// prompt ("$ ", "# ", "% ", "> ", "user@host:~$ ", "PS C:\> ") or
// nothing, and the command words before the anchor (aws, gcloud, az,
// security, sudo, …).
var printedPrompt = regexp.MustCompile(`^(?:[^\n]{0,80}?[$#%>][ \t]+)?(?:[A-Za-z0-9_./-]+[ \t]+){0,3}$`)

// lowerAssignment finds a key=value argument with a lower-case key.
var lowerAssignment = regexp.MustCompile(`^[a-z_]+=`)

// lineStartWithin returns the start of the line holding p when it lies
// at most limit bytes before p, -1 otherwise: a begin function looks back
// a bounded way (a text without line breaks would make every anchor scan
// it to its start).
func lineStartWithin(text string, p, limit int) int {
	lo := max(0, p-limit)
	if k := strings.LastIndexByte(text[lo:p], '\n'); k >= 0 {
		return lo + k + 1
	}
	if lo == 0 {
		return 0
	}
	return -1
}

// lineEndWithin returns the offset from p of the line feed ending p's
// line when it lies at most limit bytes after p, -1 otherwise.
func lineEndWithin(text string, p, limit int) int {
	return strings.IndexByte(text[p:min(len(text), p+limit)], '\n')
}

// clientPrefix is what a session transcript may put before a client's
// line: blanks, "C:", "->", ">", "~>", "***".
const clientPrefix = `[ \t]*(?:[Cc]:|[-~=]*>|\*{1,3})?[ \t]*`

// cliPositionalForms are the commands of contextfold-cli-password's second
// form, each up to where its secret starts.
var cliPositionalForms = []string{
	`snmp[a-z]+[^\n;&|]{0,300}?[ \t]-[cAX][ \t]*`,
	`net[ \t]+user[ \t]+(?:"[^"\n]+"|[^\s/"]+)[ \t]+`,
	`cmdkey[^\n;&|]{0,300}?[ \t]/pass:`,
	`gh[ \t]+secret[ \t]+set[^\n;&|]{0,300}?[ \t](?:--body|-b)(?:[ \t]+|=)`,
	`security[ \t]+add-(?:generic|internet)-password[^\n;&|]{0,300}?[ \t]-w[ \t]+`,
	`htpasswd[ \t]+-[A-Za-z]*(?:n[A-Za-z]*b|b[A-Za-z]*n)[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*[ \t]+\S+[ \t]+`,
	`vault[ \t]+login(?:[ \t]+-\S+)*[ \t]+`,
	`aws[ \t]+ssm[ \t]+put-parameter[^\n;&|]{0,300}?[ \t]--value(?:[ \t]+|=)`,
	`aws[ \t]+secretsmanager[ \t]+(?:create-secret|put-secret-value|update-secret)[^\n;&|]{0,300}?[ \t]--secret-string(?:[ \t]+|=)`,
	`az[ \t]+keyvault[ \t]+secret[ \t]+set[^\n;&|]{0,300}?[ \t]--value(?:[ \t]+|=)`,
}

// slashURLStart is urlSchemeStart for a URL that can hold a password
// with '/': in the authority's run (to a blank or a quote), a ':' before
// the first '/' and an '@' after it; most URLs are ruled out here, before
// the expression runs.
func slashURLStart(text string, p int) int {
	rest := text[p+3 : min(len(text), p+3+2048)]
	if k := strings.IndexAny(rest, " \t\r\n'\"<>\\"); k >= 0 {
		rest = rest[:k]
	}
	sl := strings.IndexByte(rest, '/')
	if sl < 0 || strings.IndexByte(rest[:sl], ':') < 0 || strings.IndexByte(rest[sl:], '@') < 0 {
		return -1
	}
	return urlSchemeStart(text, p)
}

// slashURLPassword vets a URL password holding '/': the part before its
// first '/' is no port (digits alone), and the host after the '@' has a
// letter.
func slashURLPassword(c string, m []int) (int, int, bool) {
	s, e := m[2], m[3]
	v := c[s:e]
	first := v[:strings.IndexByte(v, '/')]
	if first == "" || strings.Trim(first, "0123456789") == "" {
		return 0, 0, false
	}
	host := c[m[4]:m[5]]
	if strings.IndexFunc(host, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) < 0 &&
		strings.Count(host, ".") != 3 {
		return 0, 0, false
	}
	return s, e, len(v) >= 3
}

// saslPlainStart accepts "PLAIN" after "AUTH " or "AUTHENTICATE " (any
// case) that starts a word; it returns where PLAIN starts.
func saslPlainStart(text string, p int) int {
	b := p
	for b > 0 && (text[b-1] == ' ' || text[b-1] == '\t') {
		b--
	}
	if b == p {
		return -1
	}
	for _, w := range []string{"authenticate", "auth"} {
		if b >= len(w) && strings.EqualFold(text[b-len(w):b], w) && wordStart(text, b-len(w)) >= 0 {
			return p
		}
	}
	return -1
}

// lineStartAfterPrefix returns the start of the line holding p when only a
// client prefix (clientPrefixRe) stands between it and p, -1 otherwise.
func lineStartAfterPrefix(text string, p int) int {
	ls := lineStartWithin(text, p, 12)
	if ls < 0 || !clientPrefixRe.MatchString(text[ls:p]) {
		return -1
	}
	return ls
}

var (
	clientPrefixRe = regexp.MustCompile(`^` + clientPrefix + `$`)
	ftpUserLine    = regexp.MustCompile(`^.{0,40}?` + clientPrefix + `USER[ \t]+[^\s]+[ \t]*$`)
)

// saslPlainSecret vets a SASL PLAIN credential: base64 that decodes to
// "authzid NUL authcid NUL password", two NULs and no other control
// character (an EHLO line's mechanism list, "AUTH PLAIN LOGIN
// OAUTHBEARER", holds none).
func saslPlainSecret(c string, m []int) (int, int, bool) {
	s, e, ok := valueGroup(m, 1, 2)
	if !ok {
		return 0, 0, false
	}
	b, err := base64.StdEncoding.DecodeString(c[s:e])
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(c[s:e], "="))
	}
	if err != nil || strings.Count(string(b), "\x00") != 2 {
		return 0, 0, false
	}
	for _, c := range b {
		if c != 0 && c < 0x20 {
			return 0, 0, false
		}
	}
	return s, e, true
}

// ftpPassStart accepts "PASS " at a line's start (after a client prefix)
// when a USER command line ("USER NAME" alone, after a client prefix)
// precedes it within 512 bytes (an FTP or POP3 session),
// so that a test runner's "PASS src/app.test.js" stays.
func ftpPassStart(text string, p int) int {
	ls := lineStartAfterPrefix(text, p)
	if ls < 0 {
		return -1
	}
	for _, line := range strings.Split(text[max(0, ls-512):ls], "\n") {
		if ftpUserLine.MatchString(strings.TrimRight(line, "\r")) {
			return p
		}
	}
	return -1
}

// imapLoginStart accepts " LOGIN " whose line is an IMAP command (a tag
// before it, a client prefix before the tag) and returns where the tag
// starts.
func imapLoginStart(text string, p int) int {
	ls := lineStartWithin(text, p, 64)
	if ls < 0 {
		return -1
	}
	t := text[ls:p]
	k := strings.LastIndexAny(t, " \t>:*")
	tag := t[k+1:]
	if tag == "" || len(tag) > 12 || !clientPrefixRe.MatchString(t[:k+1]) {
		return -1
	}
	return ls + k + 1
}

// expectPromptWords name the secret a prompt asks for (lower case;
// "assword" is expect's usual glob for Password/password).
var expectPromptWords = []string{"assword", "assphrase", "passcode", "pin", "token", "secret", "api key", "otp"}

// expectSendStart accepts a send that starts a word in an expect or
// pexpect script (an "expect" within 1 KiB before it) whose last quoted
// string before it, after the previous send, is expect's pattern and
// names a secret.
func expectSendStart(text string, p int) int {
	if p > 0 && (isWordByte(text[p-1]) && text[p-1] != '_' || text[p-1] == '_' && !strings.HasSuffix(text[:p], "exp_")) {
		if !strings.HasSuffix(text[:p], "exp_") {
			return -1
		}
	}
	b := p
	if strings.HasSuffix(text[:p], "exp_") {
		b = p - 4
	}
	whole := text[max(0, b-1024):b]
	win := whole
	if k := strings.LastIndex(win, "send"); k >= 0 {
		win = win[k+4:]
	}
	if len(win) > 256 {
		win = win[len(win)-256:]
	}
	if strings.IndexAny(win, `"'`) < 0 || !strings.Contains(whole, "expect") {
		return -1
	}
	// The last quoted string of the window: its closing quote, then its
	// opening one.
	q := strings.LastIndexAny(win, `"'`)
	if q < 0 {
		return -1
	}
	o := strings.LastIndexByte(win[:q], win[q])
	if o < 0 {
		return -1
	}
	// The string is expect's pattern: the argument of expect (its
	// options, pexpect's call or list between) or a pattern of an
	// "expect { PATTERN { BODY } … }" block; expect(x).toBe('password')
	// in a JavaScript test is not.
	lead := strings.TrimRight(win[:o], " \t([")
	for _, opt := range []string{"-re", "-ex", "-gl", "-nocase"} {
		lead = strings.TrimRight(strings.TrimSuffix(lead, opt), " \t")
	}
	if !strings.HasSuffix(lead, "expect") && !strings.HasSuffix(lead, "expect_exact") &&
		!strings.HasPrefix(strings.TrimLeft(win[q+1:], " \t"), "{") {
		return -1
	}
	prompt := strings.ToLower(win[o+1 : q])
	for _, w := range expectPromptWords {
		if strings.Contains(prompt, w) {
			return b
		}
	}
	return -1
}

// expectSecret vets what a send after a secret's prompt sends: the
// literal without its trailing \r or \n escapes, not a variable, a
// command's result ([…]) or a placeholder, 3+ characters.
func expectSecret(c string, m []int) (int, int, bool) {
	s, e, ok := valueGroup(m, 1, 2)
	if !ok {
		return 0, 0, false
	}
	for e-s >= 2 && c[e-2] == '\\' && (c[e-1] == 'r' || c[e-1] == 'n') {
		e -= 2
	}
	v := c[s:e]
	return s, e, len(v) >= 3 && !isPlaceholder(v) && v[0] != '[' && !tclVariable.MatchString(v)
}

// tclVariable finds a variable's substitution in a Tcl string ($pw,
// ${pw}, $::env(PW)): a send of it sends no literal secret.
var tclVariable = regexp.MustCompile(`\$(?:[A-Za-z_{]|::)`)

// csvSecretAnchors are the header words of a secret column.
var csvSecretAnchors = []string{"password", "Password", "PASSWORD", "passwd", "secret", "Secret", "SECRET",
	"token", "Token", "TOKEN", "key", "Key", "KEY", "pwd", "PWD", "pin", "PIN"}

// csvSeparator returns the separator of a header line: '|' (psql's and
// mysql's tables, Markdown's), a tab, ',' or ';' (the first found of them,
// in that order), 0 for none.
func csvSeparator(line string) byte {
	for _, c := range []byte{'|', '\t', ',', ';'} {
		if strings.IndexByte(line, c) >= 0 {
			return c
		}
	}
	return 0
}

// csvCells splits a CSV line on sep, a double-quoted cell holding sep and
// doubled quotes; it returns each cell's span (quotes included).
func csvCells(line string, sep byte) [][2]int {
	var out [][2]int
	i := 0
	for {
		s := i
		if i < len(line) && line[i] == '"' {
			i++
			for i < len(line) {
				if line[i] == '"' {
					if i+1 < len(line) && line[i+1] == '"' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
		}
		for i < len(line) && line[i] != sep {
			i++
		}
		out = append(out, [2]int{s, i})
		if i >= len(line) {
			return out
		}
		i++
	}
}

var csvNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// tableCells is csvCells, without the empty cells a '|' table's outer
// bars make ("| a | b |" has two cells).
func tableCells(line string, sep byte) [][2]int {
	cs := csvCells(line, sep)
	if sep != '|' {
		return cs
	}
	if len(cs) > 0 && strings.TrimSpace(line[cs[0][0]:cs[0][1]]) == "" {
		cs = cs[1:]
	}
	if n := len(cs); n > 0 && strings.TrimSpace(line[cs[n-1][0]:cs[n-1][1]]) == "" {
		cs = cs[:n-1]
	}
	return cs
}

// csvHeaderCell reports whether a header cell names a secret column:
// the name alone (quotes and blanks around it removed), vetted as a NAME
// in NAME=VALUE (password, api_key, client_secret, Token; not
// password_min_length or token_count), or "pin".
func csvHeaderCell(cell string) bool {
	n := strings.Trim(strings.TrimSpace(cell), `"`)
	n = strings.ReplaceAll(strings.TrimSpace(n), " ", "_")
	if n == "" || len(n) > 40 || !csvNameRe.MatchString(n) {
		return false
	}
	if strings.EqualFold(n, "pin") {
		return true
	}
	parts := splitName(n)
	last := parts[len(parts)-1]
	if last == "KEY" {
		return len(parts) >= 2 && keyQualifiers[parts[len(parts)-2]]
	}
	return isSecretWord(last) || joinedQualifiedKey(last) || last == "PWD"
}

// csvHeaderStart accepts an anchor whose line is a CSV or TSV header
// naming a secret column: two or more cells, a separator, no '=' or ':'
// (an assignment, a YAML key), not indented (code), every cell a name
// (letters, digits, '_', '-', blanks; none empty) and the anchor's cell
// naming a secret. It returns the line's start.
func csvHeaderStart(text string, p int) int {
	ls := lineStartWithin(text, p, 2048)
	le := lineEndWithin(text, p, 2048)
	if ls < 0 || le < 0 {
		return -1 // a line too long for a header, or no row after it
	}
	// A header may open a JSON string ({"stdout":"id,password\n…" in
	// the decoded view): it starts after the member's quote.
	for _, q := range []string{`":"`, `": "`} {
		if k := strings.LastIndex(text[ls:p], q); k >= 0 {
			ls += k + len(q)
		}
	}
	line := strings.TrimSuffix(text[ls:p+le], "\r")
	if len(line) > 2048 || strings.ContainsAny(line, "=:(){}<>[]") {
		return -1
	}
	sep := csvSeparator(line)
	if sep == 0 {
		return -1
	}
	if line == "" || sep != '|' && (line[0] == ' ' || line[0] == '\t') {
		return -1 // indented: code, not a listing (a psql table's header is)
	}
	ok := false
	for _, c := range tableCells(line, sep) {
		cell := strings.Trim(strings.TrimSpace(line[c[0]:c[1]]), `"`)
		if !csvNameRe.MatchString(strings.ReplaceAll(strings.TrimSpace(cell), " ", "_")) {
			return -1 // a header's cells are names ("pam_deny.so", "[success=1", "" are not)
		}
		if c[0] <= p-ls && p-ls < c[1]+1 {
			ok = csvHeaderCell(line[c[0]:c[1]])
		}
	}
	if !ok {
		return -1
	}
	return ls
}

// csvHeaderLike reports whether line could be a header of sep: every cell
// a name, one naming a secret.
func csvHeaderLike(line string, sep byte) bool {
	secret := false
	for _, c := range tableCells(line, sep) {
		cell := strings.Trim(strings.TrimSpace(line[c[0]:c[1]]), `"`)
		if !csvNameRe.MatchString(strings.ReplaceAll(strings.TrimSpace(cell), " ", "_")) {
			return false
		}
		secret = secret || csvHeaderCell(cell)
	}
	return secret
}

// csvSecretCells returns the secret cells of a CSV listing whose header
// is cand's first line: the cells under a secret column of each row after
// it that has as many cells as the header, up to the first row that does
// not (the listing's end; a '|' table's rule lines are skipped), or to a
// line that could be a header itself (it is read from there: a text of
// header-like lines is read once, not once a line). An empty
// cell, a placeholder, a value of fewer than 4 characters or a word of
// the header cell (a PAM file's "password" lines) stays, and in a '|'
// table (psql, mysql, Markdown) a value must look like a credential
// (labelValue): a document's table holds words and names.
func csvSecretCells(cand string, _ []int) [][2]int {
	he := strings.IndexByte(cand, '\n')
	header := strings.TrimSuffix(cand[:he], "\r")
	sep := csvSeparator(header)
	hc := tableCells(header, sep)
	var cols []int
	for i, c := range hc {
		if csvHeaderCell(header[c[0]:c[1]]) {
			cols = append(cols, i)
		}
	}
	var out [][2]int
	at := he + 1
	for at < len(cand) {
		le := strings.IndexByte(cand[at:], '\n')
		if le < 0 {
			le = len(cand) - at
		}
		line := strings.TrimSuffix(cand[at:at+le], "\r")
		if sep == '|' && strings.Trim(line, "-+|=: \t") == "" && line != "" {
			at += le + 1 // a table's rule line (---+---, |---|---|, +----+)
			continue
		}
		cells := tableCells(line, sep)
		if len(cells) != len(hc) || csvHeaderLike(line, sep) {
			break // the listing's end, or another header (read from there)
		}
		for _, i := range cols {
			s, e := cells[i][0], cells[i][1]
			for s < e && (line[s] == ' ' || line[s] == '"') {
				s++
			}
			for e > s && (line[e-1] == ' ' || line[e-1] == '"') {
				e--
			}
			v := line[s:e]
			if sep == '|' && !labelValue(v) {
				continue // a document's table: its cells are words and names
			}
			if len(v) >= 4 && !isPlaceholder(v) && !headerWord(header[hc[i][0]:hc[i][1]], v) {
				out = append(out, [2]int{at + s, at + e})
			}
		}
		at += le + 1
	}
	return out
}

// headerWord reports whether v is a word of the header cell (a PAM file's
// "password" lines under "see password").
func headerWord(cell, v string) bool {
	for _, w := range strings.FieldsFunc(cell, func(r rune) bool { return r == ' ' || r == '"' || r == '_' || r == '-' }) {
		if strings.EqualFold(w, v) {
			return true
		}
	}
	return false
}

// pinStart accepts a PIN or PUK label that starts a word or ends a name
// joined by '_' (YUBIKEY_PIN), and returns where the name starts.
func pinStart(text string, p int) int {
	// "ping", "pinned", "spinner": a letter after the label is another
	// word (most occurrences end here, before the expression runs).
	if q := p + 3; q < len(text) && (text[q] >= 'a' && text[q] <= 'z' || text[q] >= 'A' && text[q] <= 'Z') {
		return -1
	}
	if p > 0 && text[p-1] == '_' {
		b := p - 1
		for b > 0 && (isWordByte(text[b-1])) {
			b--
		}
		return wordStart(text, b)
	}
	return wordStart(text, p)
}

// k8sYAMLSecretStart accepts "kind: Secret" that ends its line and
// returns where its YAML document starts: after the last "---" line before
// it within 8 KiB, or 8 KiB before it; -1 when another "kind: Secret"
// comes first in the same document (that one read it).
func k8sYAMLSecretStart(text string, p int) int {
	rest := text[p+len("kind: Secret") : min(len(text), p+len("kind: Secret")+1)]
	if rest != "" && !strings.ContainsRune("\r\n \t", rune(rest[0])) {
		return -1 // kind: SecretStore
	}
	b := max(0, p-8192)
	if k := strings.LastIndex(text[b:p], "kind: Secret"); k >= 0 {
		b += k + 1 // the Secret before it read this document, or its own starts after it
	}
	if k := strings.LastIndex(text[b:p], "\n---"); k >= 0 {
		return b + k + 4
	}
	if b > max(0, p-8192) {
		return -1
	}
	return b
}

// k8sJSONSecretStart accepts "kind": "Secret" and returns where the
// object holding it starts: the nearest unmatched '{' before it within
// 8 KiB and after any earlier "kind" member (strings are not told apart:
// a '{' or '}' inside one may shift it, and then the data map is looked
// for in a wrong span).
func k8sJSONSecretStart(text string, p int) int {
	depth := 0
	lo := max(0, p-8192)
	if k := strings.LastIndex(text[lo:p], `"kind"`); k >= 0 {
		lo += k // the object holding an earlier "kind" ends before this one's '{'
	}
	for i := p - 1; i >= lo; i-- {
		switch text[i] {
		case '}':
			depth++
		case '{':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

var (
	k8sYAMLData = regexp.MustCompile(`(?m)^([ \t]*)(?:data|stringData):[ \t]*\r?\n`)
	k8sYAMLItem = regexp.MustCompile(`^([ \t]+)[^\s:#][^:\n]*:[ \t]*(?:[|>][+-]?[ \t]*\r?\n[ \t]+)?["']?([^\s"'#][^\r\n"']*?)["']?[ \t]*(?:\r?\n|$)`)
	k8sJSONData = regexp.MustCompile(`"(?:data|stringData)"[ \t]*:[ \t]*\{`)
	k8sJSONItem = regexp.MustCompile(`^[\s,]*"[^"\n]+"[ \t]*:[ \t]*"((?:[^"\\\n]|\\.)*)"`)
)

// k8sSecretValue reports whether a Secret's value is redacted: 4+
// characters, not a placeholder.
func k8sSecretValue(v string) bool { return len(v) >= 4 && !isPlaceholder(v) }

// k8sYAMLSecretValues returns the values of a YAML Kubernetes Secret's
// data and stringData maps in cand, which starts at the Secret's
// document: the indented "key: value" lines under data: (a block
// scalar's first line included).
func k8sYAMLSecretValues(cand string, _ []int) [][2]int {
	var out [][2]int
	end := len(cand)
	if k := strings.Index(cand, "\n---"); k >= 0 {
		end = k
	}
	doc := cand[:end]
	for _, d := range k8sYAMLData.FindAllStringSubmatchIndex(doc, -1) {
		indent := d[3] - d[2]
		at := d[1]
		for at < len(doc) {
			m := k8sYAMLItem.FindStringSubmatchIndex(doc[at:])
			if m == nil || m[3]-m[2] <= indent {
				break
			}
			if k8sSecretValue(doc[at+m[4] : at+m[5]]) {
				out = append(out, [2]int{at + m[4], at + m[5]})
			}
			at += m[1]
		}
	}
	return out
}

// k8sJSONSecretValues returns the "key": "value" members of the "data"
// and "stringData" objects of the JSON object cand starts with (up to its
// matching '}').
func k8sJSONSecretValues(cand string, _ []int) [][2]int {
	depth, end := 0, len(cand)
scan:
	for i := 0; i < len(cand); i++ {
		switch cand[i] {
		case '"':
			for i++; i < len(cand) && cand[i] != '"'; i++ {
				if cand[i] == '\\' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end = i + 1
				break scan
			}
		}
	}
	doc := cand[:end]
	var out [][2]int
	for _, d := range k8sJSONData.FindAllStringIndex(doc, -1) {
		at := d[1]
		for {
			m := k8sJSONItem.FindStringSubmatchIndex(doc[at:])
			if m == nil {
				break
			}
			if k8sSecretValue(doc[at+m[2] : at+m[3]]) {
				out = append(out, [2]int{at + m[2], at + m[3]})
			}
			at += m[1]
		}
	}
	return out
}

// promptLineStart accepts the "]:" of a prompt whose label names a secret
// (labelWords among the words before its '[', after the line's last
// quote, '=', '(', '{' or ';'; a blank before the '[', no URL before it;
// "AWS Secret Access Key [None]:", "Enter API token [****]:") and
// returns the line's start.
func promptLineStart(text string, p int) int {
	ls := lineStartWithin(text, p, 160)
	if ls < 0 {
		return -1
	}
	line := text[ls:p]
	k := strings.LastIndexByte(line, '[')
	if k < 0 {
		return -1
	}
	if k == 0 || line[k-1] != ' ' && line[k-1] != '\t' || strings.Contains(line[:k], "://") {
		return -1 // "LABEL [DEFAULT]:", not a URL's "@[::1]:"
	}
	label := strings.ToLower(line[:k])
	if q := strings.LastIndexAny(label, "\"'=({;"); q >= 0 {
		label = label[q+1:] // the prompt after a JSON string's quote
	}
	if !labelWords.MatchString(label) && !strings.Contains(label, "secret access key") {
		return -1
	}
	return ls
}

// ipsecSecretStart accepts PSK, XAUTH or EAP after ": " on an
// ipsec.secrets line.
func ipsecSecretStart(text string, p int) int {
	b := p
	for b > 0 && (text[b-1] == ' ' || text[b-1] == '\t') {
		b--
	}
	if b == p || b == 0 || text[b-1] != ':' {
		return -1
	}
	return p
}
