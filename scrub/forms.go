package scrub

import (
	"regexp"
	"strings"
)

// More shapes a secret's context gives, in code and configuration that
// agents print (session 14). They join extraRules (init below) and run
// the same way:
//
//   - contextfold-call-secret (Ruby's SMTP): the password of
//     Net::SMTP.start(HOST, PORT, HELO, USER, PASSWORD, :plain) and of
//     smtp.start(HELO, USER, PASSWORD, :login): the quoted argument just
//     before the authentication type's symbol, after the user's.
//   - contextfold-npmrc-auth: npm's per-registry credentials,
//     //HOST/PATH/:_authToken=VALUE, :_auth= (base64 of USER:PASSWORD) and
//     :_password= (base64), the name bare or quoted ("//host/:_authToken"
//     = "VALUE", as some .npmrc writers put it; npm config set NAME VALUE).
//   - contextfold-keyed-secret (Python bytes): b'password': b'VALUE' and
//     b"api_key": b"VALUE", a dictionary of bytes keys.
//   - contextfold-htpasswd: the hash of an Apache .htpasswd line,
//     USER:$apr1$SALT$HASH, USER:{SHA}BASE64, USER:$2y$COST$… (bcrypt):
//     offline-crackable, a credential.

func init() {
	extraRules = append(extraRules, formRules...)
}

var formRules = []extraRule{
	{
		id:      "contextfold-call-secret",
		anchors: []string{"SMTP.start(", "smtp.start("},
		begin:   wordStart,
		// 1: the password's quote, 2: the password; the user's quoted
		// argument before it, the auth type's symbol after it.
		re:      regexp.MustCompile(`^(?:SMTP|smtp)\.start\([^()\n]{0,256}?(?:'[^'\n]{1,128}'|"[^"\n]{1,128}")[ \t]*,[ \t]*(['"])([^'"\\\n]{1,256})['"][ \t]*,[ \t]*:(?:plain|login|cram_md5|xoauth2)[ \t]*\)`),
		maxLen:  640,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[4]:m[5]]
			return m[4], m[5], c[m[2]] == c[m[5]] && !isPlaceholder(v) && !plainWord(v) && len(v) >= 4
		},
	},
	{
		id:      "contextfold-npmrc-auth",
		anchors: []string{"/:_authToken", "/:_auth", "/:_password"},
		begin:   npmrcStart,
		// //HOST/:_NAME = VALUE, the name's quotes and the value's
		// optional. 1: the value.
		re:      regexp.MustCompile(`^(?:\\?")?//[^\s"=\\]{1,256}/:_(?:authToken|auth|password)(?:\\?")?[ \t]*=[ \t]*(?:\\?")?([^\s"#;,\\]{1,1000})`),
		maxLen:  1400,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			return m[2], m[3], npmrcValue(c[m[2]:m[3]])
		},
	},
	{
		id:      "contextfold-npmrc-auth",
		anchors: []string{"/:_authToken", "/:_auth", "/:_password"},
		begin:   npmConfigSetStart,
		// npm config set //HOST/:_NAME VALUE (yarn, pnpm alike), quotes
		// optional. 1: the value.
		re:      regexp.MustCompile(`^(?:\\?")?//[^\s"=\\]{1,256}/:_(?:authToken|auth|password)(?:\\?")?[ \t]+(?:\\?")?([^\s"#;,\\]{1,1000})`),
		maxLen:  1400,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			return m[2], m[3], npmrcValue(c[m[2]:m[3]])
		},
	},
	{
		id:      "contextfold-keyed-secret",
		anchors: []string{"b'", `b"`},
		begin:   wordStart,
		// b'NAME': b'VALUE' (the value bytes or str). 1: the name, 2 or 3:
		// the value.
		re:      regexp.MustCompile(`^b(?:'([A-Za-z_][A-Za-z0-9_.-]{0,63})'|"([A-Za-z_][A-Za-z0-9_.-]{0,63})")[ \t]*:[ \t]*b?(?:'([^'\\\n]{1,512})'|"([^"\\\n]{1,512})")`),
		maxLen:  700,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			ns, ne, _ := valueGroup(m, 1, 2)
			s, e, ok := valueGroup(m, 3, 4)
			return s, e, ok && acceptEnvSecret(c[ns:ne], c[s:e])
		},
	},
	{
		id:      "contextfold-htpasswd",
		anchors: []string{":$apr1$", ":{SHA}", ":$2y$", ":$2a$", ":$2b$"},
		begin:   htpasswdStart,
		// USER:HASH (a line of the file, of htpasswd -n's output, of an
		// echo into the file). 1: the hash.
		re:      regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}:(\$apr1\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}|\{SHA\}[A-Za-z0-9+/]{27}=|\$2[aby]\$[0-9]{2}\$[./0-9A-Za-z]{53})`),
		maxLen:  200,
		oneLine: true,
		secret:  func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
}

// npmrcStart accepts a registry's credential name (the anchor at p is its
// "/:_…" end) whose "//" starts it on the same line, with no blank between,
// and returns where it starts (at its quote when quoted).
func npmrcStart(text string, p int) int {
	lo := max(0, p-258)
	k := strings.LastIndex(text[lo:p], "//")
	if k < 0 {
		return -1
	}
	b := lo + k
	if strings.ContainsAny(text[b:p], " \t\r\n\"=") {
		return -1
	}
	if b > 0 && text[b-1] == '"' {
		b--
		if b > 0 && text[b-1] == '\\' {
			b-- // a JSON string's \"
		}
	}
	if b > 0 && (isWordByte(text[b-1]) || text[b-1] == ':') {
		return -1 // https://host//:_auth… is a URL's
	}
	return b
}

// npmrcValue reports whether v, the value after an npm credential's
// name, may be the secret: 8+ printable ASCII characters (an npm token
// has 40, a base64 USER:PASSWORD 8 at least), no placeholder,
// no ${VARIABLE}, no code or prose around it (a backtick, a bracket).
func npmrcValue(v string) bool {
	if len(v) < 8 || isPlaceholder(v) || strings.HasPrefix(v, "${") || strings.ContainsAny(v, "`()<>[]{}") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '!' || v[i] > '~' {
			return false
		}
	}
	return true
}

// npmConfigSetStart is npmrcStart for a name that "config set " (npm,
// yarn, pnpm) precedes on its line.
func npmConfigSetStart(text string, p int) int {
	b := npmrcStart(text, p)
	if b < 0 || !strings.HasSuffix(strings.TrimRight(text[max(0, b-16):b], " \t"), "config set") {
		return -1
	}
	return b
}

// htpasswdStart accepts the user name before the anchor at p (the
// ":HASH-PREFIX"), a word that no name character (nor a '$': a hash's
// own field) precedes, and returns where it starts.
func htpasswdStart(text string, p int) int {
	b := p
	for b > 0 && p-b < 64 {
		c := text[b-1]
		if !(isWordByte(c) || c == '.' || c == '@' || c == '-') {
			break
		}
		b--
	}
	if b == p || b > 0 && text[b-1] == '$' {
		return -1
	}
	return b
}
