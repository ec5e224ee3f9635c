package scrub

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode"
)

// Extra rules: our own detectors, run in addition to the gitleaks defaults.
// Each one covers a class of secret that the gitleaks v8.30 default rules
// miss (checked against the test corpus and field report 22):
//
//   - contextfold-url-password: a password in the user-info part of a URL,
//     such as postgres://user:pass@host/db, mysql://…, redis://:pass@host,
//     https://user:token@git.example.com. Gitleaks has no general rule for
//     database URLs. Only the password is redacted; user and host stay.
//   - contextfold-url-signature: the signature of a pre-signed URL
//     (X-Amz-Signature, X-Goog-Signature, CloudFront's Signature, an Azure
//     SAS token's sig) as a query parameter; gitleaks has no rule for it.
//   - contextfold-env-secret: a .env or shell style assignment NAME=value
//     (also "export NAME=value" and "--name=value") whose name ends in a
//     secret word (PASSWORD, PASSWD, PASS, PWD, SECRET, TOKEN, AUTH, CREDENTIALS,
//     PASSPHRASE, SSHPASS, PSK, AUTHTOK, API_KEY/APIKEY, ACCESS_KEY, ACCESS_KEY_ID, PRIVATE_KEY,
//     SECRET_KEY, SIGNING_KEY, ENCRYPTION_KEY, MASTER_KEY, AUTH_KEY, or any
//     *_KEY whose value has 16+ characters mixing letters and digits; a
//     component ending in PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN or
//     APIKEY counts too: PGPASSWORD, DBPASSWORD) and
//     whose value is non-trivial: 8+ characters, not a variable reference
//     ($VAR, ${VAR}, %VAR%, {{var}}, <placeholder>), not a path, not a
//     run of one repeated character, not true/false/null/none. Gitleaks'
//     generic rule requires high entropy and skips many such values (e.g.
//     AWS_SECRET_ACCESS_KEY values it cannot classify, test passwords).
//     Names are matched by their last components only, so AWS_REGION,
//     EDITOR, MAX_TOKENS or TOKEN_COUNTER never match.
//   - contextfold-private-key-block: a whole PEM private key block, from
//     "-----BEGIN … PRIVATE KEY-----" to the matching END line, or to the
//     end of the text when the END line is missing (truncated output).
//     Gitleaks requires 64+ characters of body and the END line.
//   - contextfold-jwt: a JSON Web Token (eyJ….eyJ….signature). Gitleaks'
//     rule requires 17+ characters per part and a minimum entropy.
//   - contextfold-aws-access-key-id: AKIA/ASIA/ABIA/ACCA followed by 16
//     upper-case letters or digits. Gitleaks only accepts the base-32
//     alphabet (no 0, 1, 8, 9) above an entropy threshold, so many pasted
//     and test key ids pass unnoticed.
//   - contextfold-keyed-secret: the same names as contextfold-env-secret,
//     with the same vetting of the value, as a key followed by ':' — a YAML
//     mapping (password: value), a JSON or Python member ("password":
//     "value", 'api_key': 'value', JSON-escaped \"token\": \"value\"),
//     an HTTP header (X-Api-Key: value, PRIVATE-TOKEN: value). Gitleaks'
//     generic rule declines values with punctuation (a '!' or '#' in a
//     password) or below its entropy threshold.
//   - contextfold-auth-header: the credential of an Authorization or
//     Proxy-Authorization header (Bearer, Basic, token, Bot, … or no
//     scheme), written as a header (Authorization: Bearer …), a JSON or
//     Python member ("Authorization": "Bearer …") or a call argument
//     ("Authorization", "Bearer …"). Gitleaks only knows curl's -H form
//     and tokens of known vendors; an opaque bearer token (an OAuth access
//     token, a session token) passed unnoticed. The credential is a
//     token68 run (RFC 9110 §11.2) of 8+ characters that is not a plain
//     lower-case word and not a placeholder, or of 4+ with a digit after a
//     scheme (minAuthCredential).
//   - contextfold-named-secret: the same names and vetting, as a name
//     member followed by a value member: a container's environment entry
//     ({"name": "DB_PASSWORD", "value": …}, YAML "- name: …" then
//     "value: …") or a CloudFormation ParameterKey and ParameterValue.
//   - contextfold-flag-secret and contextfold-xml-secret: the same names
//     and value vetting, as a command-line option with its value after a
//     blank (--token VALUE, --password 'VALUE') and as an XML element
//     (<password>VALUE</password>, Maven's settings.xml).
//   - contextfold-spaced-secret: a compound secret name (client_secret,
//     clientSecret, API-KEY) and its value after a blank, no operator; the
//     value must have 12+ characters mixing letters and digits and not be
//     a snake_case identifier.
//   - contextfold-cookie: the pairs of a Cookie header and the value of a
//     Set-Cookie header (session cookies are credentials).
//   - contextfold-netrc-password: "password VALUE" in a .netrc entry
//     (after "machine HOST" or "default", and "login USER").
//   - contextfold-cli-password: a password given on a command line, the
//     MySQL and MariaDB clients' -pPASSWORD, sshpass -p PASSWORD,
//     redis-cli -a PASSWORD, smbclient -U user%PASSWORD and htpasswd -b.
//   - contextfold-login-password: -p PASSWORD (quoted, attached or after
//     '=') on a command line that logs in (docker login, az login,
//     mongosh -u …), not a port or a port mapping.
//   - contextfold-stdin-password: echo PASSWORD | … --password-stdin.
//   - contextfold-password-line: "password VALUE" (also bindpw,
//     rootpw) first on a configuration line: msmtprc, nslcd.conf.
//   - contextfold-oracle-password: Oracle's USER/PASSWORD@DB logon on
//     sqlplus's, Data Pump's, RMAN's command line, userid=, CONNECT.
//   - contextfold-redis-auth: AUTH [USER] PASSWORD at a redis-cli prompt
//     or as redis-cli's command.
//   - contextfold-prose-secret: a secret told in a sentence ("the db
//     password is VALUE", "my API key is `VALUE`", "the password for
//     root: VALUE", "db pass = VALUE", "pw VALUE"), the value mixing
//     letters and digits (and a symbol, after a short name).
//   - contextfold-call-secret: a secret's setter or builder member
//     called with a string literal (setPassword("…"), .apiKey("…")),
//     and the password of auth("user", "…") and login("user", "…").
//   - contextfold-actions-mask: the value of GitHub Actions'
//     ::add-mask::VALUE.
//   - contextfold-keystore-password: the JDK's keytool and jarsigner
//     -storepass/-keypass/-new PASSWORD, every one of a command line.
//   - contextfold-pgpass: the password field of a .pgpass line.
//   - contextfold-curl-user: the password of curl's -u/--user USER:PASSWORD,
//     also in an argument vector (gitleaks' curl-auth-user reads only a
//     command line).
//   - contextfold-userinfo-password: USER:PASSWORD@HOST with no scheme
//     (admin:pw@db.internal:5432, git clone user:token@github.com/…).
//   - contextfold-putty-private-key: the private lines of a PuTTY key file.
//   - contextfold-google-oauth-token: a Google OAuth access token (ya29.…).
//   - contextfold-webhook-url: a Slack webhook's or workflow trigger's
//     secret path and a Discord webhook's token.
//   - contextfold-plist-secret: <key>NAME</key><string>VALUE</string> in a
//     property list, NAME vetted as in NAME=VALUE.
//   - contextfold-docker-auth: a Docker config.json "auth" value, the
//     base64 of USER:PASSWORD.
//   - contextfold-llm-api-key: API keys with well-known prefixes
//     sk-ant-<kind><NN>-…, sk-proj-…, sk-svcacct-…, sk-admin-… of 20+
//     characters. Gitleaks only knows exact lengths and an embedded marker,
//     which shortened or reformatted keys do not have.
//
// Rule ids of our rules start with "contextfold-".
//
// A token is found whatever precedes it: a rule that wants a word boundary
// before its token (wordStart, urlSchemeStart) also accepts '_' (Markdown
// emphasis, a name joined by '_') and a JSON or C escape (\n, \t, \u0026)
// just before it, and a NAME never starts with the letter of such an escape
// ("\nTOKEN=…" names TOKEN, not NTOKEN).

// extraRule is one of our rules. To stay fast on large inputs a rule is not
// run over the whole text: each occurrence of one of its anchor strings
// yields a candidate start (begin), and the rule's regular expression,
// anchored with ^, is matched from there on a bounded slice of the text.
type extraRule struct {
	id      string
	anchors []string
	// begin returns where a match containing the anchor found at p would
	// start, or -1 when there cannot be one.
	begin func(text string, p int) int
	re    *regexp.Regexp // anchored with ^
	// maxLen bounds the slice the regex sees (0 = rest of the text).
	maxLen int
	// secret returns the secret span given the submatch indexes (relative
	// to the candidate start), or ok=false to veto the candidate.
	secret func(cand string, m []int) (start, end int, ok bool)
	// oneLine: no match of re holds a line feed but as its last byte, no
	// $ (nor \b, \z) of re can match where such a cut ends the input, and
	// secret looks at the match alone. The candidate is then cut after
	// the first line feed from its start: its matches are the same, and
	// the regexp engine's setup, which clears state in proportion to its
	// input (1 to 4 KiB, where a tool output's ':' or '=' gives a
	// candidate every line), is paid for the line alone.
	oneLine bool
	// multi, when set, replaces secret: it returns every secret span of
	// the candidate (relative to its start), for a rule whose match is a
	// header or a document and whose secrets are many (a CSV column's
	// cells, a Kubernetes Secret's values).
	multi func(cand string, m []int) [][2]int
	// need maps an anchor to strings one of which every match of re
	// from that anchor holds: a candidate holding none is passed over
	// without running re (a text of "mysql " repeated gave a candidate
	// of 512 bytes every 6 bytes, each scanned for its -p).
	need map[string][]string
	// failedUntil, when set, returns for a candidate start b whose
	// expression found no match where the next candidate that can match
	// starts at the earliest: the anchor's occurrences before it are
	// passed over. A rule whose match from b reads a run of characters
	// that a later occurrence inside the run reads too sets it.
	failedUntil func(text string, b int) int
}

var extraRules = []extraRule{
	{
		id:      "contextfold-url-password",
		anchors: []string{"://"},
		begin:   urlSchemeStart,
		// The password may hold an unescaped '@' (https://bob:p@ss@host:
		// the userinfo ends at the authority's last '@', as a URL parser
		// reads it), unless what follows its first '@' holds a query's
		// '?' or a fragment's '#' (https://u:pw@host?to=a@b.example: the
		// later '@' is the query's), urlPassword.
		re:     regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@'"\\<>]*:([^\s'"\\/<>]{3,})@[A-Za-z0-9\[]`),
		maxLen: 2048,
		secret: urlPassword,
	},
	{
		id:      "contextfold-url-signature",
		anchors: []string{"ignature=", "IGNATURE=", "sig="},
		begin:   urlSignatureStart,
		// The signature of a pre-signed URL, a bearer credential until it
		// expires: S3's and GCS's X-Amz-Signature and X-Goog-Signature,
		// CloudFront's Signature, an Azure SAS token's sig, as a query
		// parameter (after '?', '&', "&amp;", "%26" or \u0026). 1: the
		// value, 16+ characters of a URL's query (percent escapes kept).
		re:      regexp.MustCompile(`^(?i:x-amz-signature|x-goog-signature|signature|sig)=([A-Za-z0-9%+/=_.~-]{16,})`),
		maxLen:  4096,
		oneLine: true,
		secret:  func(c string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-env-secret",
		anchors: []string{"="},
		begin:   envNameStart,
		// 1: name; value: 2 double-quoted, 3 single-quoted, 4 escaped-quoted
		// (inside JSON text), 6 bare. A bare value ends at whitespace, a
		// quote, a shell separator, or a JSON escape (\n, \t, \", …).
		// The name may be a quoted subscript: os.environ["NAME"] = …,
		// ENV['NAME'] = …, headers[\"X-Api-Key\"] = … (envNameStart).
		// A double-quoted value may hold escaped quotes ("a\"b"); a bare
		// value may hold shell-escaped blanks (a\ b); 5: an ANSI-C quoted
		// value ($'p@ss\nword', bash), its escapes kept.
		re:      regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*)(?:\\?["'][ \t]*\])?[ \t]*=[ \t]*(?:"((?:[^"\\\r\n]|\\[^\r\n])*)"|'([^'\r\n]*)'|\\"((?:[^"\\\r\n]|\\[^"\r\n])*)\\"|\$'((?:[^'\\\r\n]|\\[^\r\n])*)'|((?:[^\s"'\\;&|` + "`" + `]|\\[^nrtbfu"\\/\s]|\\[ \t])+))`),
		maxLen:  4096,
		secret:  keyedSecret(6),
		oneLine: true,
	},
	{
		id:      "contextfold-keyed-secret",
		anchors: []string{":"},
		begin:   keyNameStart,
		// 1: name; value: 2 double-quoted, 3 single-quoted, 4 escaped-quoted
		// (inside JSON text), 5 bare. A bare value ends at whitespace, a
		// quote, ',', '}', ']' (a flow mapping), a shell separator or a
		// JSON escape. A YAML tag (!!str, !secret) may precede the value,
		// and a YAML block scalar (password: |, >-) holds it on the next,
		// indented line. Markdown's bold may close after the name or the
		// colon (**Password**: …, **Password:** …).
		re:     regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*)(?:\\?["']|\*\*?)?[ \t]*:(?::[ \t])?(?:\*\*?)?[ \t]*(?:!!?[A-Za-z0-9_/:.-]*[ \t]+)?(?:[|>][1-9]?[+-]?[1-9]?[ \t]*\r?\n[ \t]+)?(?:"([^"\r\n]*)"|'([^'\r\n]*)'|\\"((?:[^"\\\r\n]|\\[^"\r\n])*)\\"|((?:[^\s"'\\,;&|}\]` + "`" + `]|\\[^nrtbfu"\\/\s])+))`),
		maxLen: 4096,
		secret: envSecret,
	},
	{
		id:      "contextfold-named-secret",
		anchors: []string{"name", "Name", "NAME", "ParameterKey"},
		begin:   namedSecretStart,
		// A secret named by one member and held by the next: a container
		// environment entry ({"name": "DB_PASSWORD", "value": "…"} in a
		// Kubernetes manifest, an ECS task definition or Azure app
		// settings; "- name: DB_PASSWORD" then "  value: …" in YAML) or a
		// CloudFormation parameter (ParameterKey, ParameterValue). The
		// members are quoted (plain or JSON-escaped) or bare keys, the
		// value member follows the name member after a ',' and blanks or
		// line breaks (raw or escaped). 1: the name; value: 2
		// double-quoted, 3 single-quoted, 4 escaped-quoted, 5 bare.
		re:     regexp.MustCompile(`^(?:[Nn]ame|NAME|ParameterKey)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?([A-Za-z_][A-Za-z0-9_.-]*)(?:\\?["'])?[ \t]*,?(?:[ \t]|\r?\n|\\[nrt])*(?:\\?["'])?(?:[Vv]alue|VALUE|ParameterValue)(?:\\?["'])?[ \t]*[:=][ \t]*(?:"([^"\r\n]*)"|'([^'\r\n]*)'|\\"((?:[^"\\\r\n]|\\[^"\r\n])*)\\"|((?:[^\s"'\\,;&|}\]` + "`" + `]|\\[^nrtbfu"\\/\s])+))`),
		maxLen: 1024,
		secret: envSecret,
	},
	{
		id:      "contextfold-flag-secret",
		anchors: []string{"--"},
		begin:   flagStart,
		// A command-line option whose name ends in a secret word, with its
		// value after a blank (--token VALUE, --password 'VALUE'); the
		// --name=VALUE form is contextfold-env-secret's. 1: name; value:
		// 2 double-quoted, 3 single-quoted, 4 bare.
		re:      regexp.MustCompile(`^--([A-Za-z][A-Za-z0-9_.-]*)[ \t]+(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'\\;&|` + "`" + `]+))`),
		maxLen:  1024,
		secret:  flagSecret,
		oneLine: true,
	},
	{
		id:      "contextfold-spaced-secret",
		anchors: spacedSecretAnchors,
		begin:   spacedNameStart,
		// A compound secret name and its value after a blank, with no
		// operator: "client_secret VALUE", "api_key VALUE" (a key file, a
		// CLI's "KEY VALUE" listing), "| client_secret | VALUE |" (a
		// Markdown table). 1: name, 2: value (a bare run ending at a
		// blank, a quote, or a separator).
		re:     regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*)(?:[ \t]*\|)?[ \t]+([^\s"'\\;&|,(){}<>\[\]` + "`" + `]+)`),
		maxLen: 1024,
		secret: spacedSecret,
	},
	{
		id:      "contextfold-spaced-secret",
		anchors: []string{"token", "Token", "TOKEN"},
		begin:   wordStart,
		// The word "token" alone and a GitHub classic OAuth token, 40 hex
		// digits of one case, after a blank: a note's or a log's "token
		// 0123…" (git's "Authorization: token …" header written without
		// its name). A single word is prose for contextfold-spaced-secret,
		// but 40 hex digits after it are no word. 1: the token.
		re:      regexp.MustCompile(`^(?:token|Token|TOKEN)[ \t]+([0-9a-f]{40}|[0-9A-F]{40})(?:[^0-9A-Za-z]|$)`),
		maxLen:  128,
		oneLine: true,
		secret:  func(c string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-xml-secret",
		anchors: []string{"<"},
		begin:   xmlStart,
		// <password>VALUE</password> and the like (Maven settings.xml,
		// .NET and Java configuration): 1: the tag, 2: the value, 3: the
		// closing tag, which must be the same.
		re:      regexp.MustCompile(`^<([A-Za-z_][A-Za-z0-9_.:-]*)>([^<>\r\n]+)</([A-Za-z_][A-Za-z0-9_.:-]*)>`),
		maxLen:  1024,
		secret:  xmlSecret,
		oneLine: true,
	},
	{
		id:      "contextfold-cookie",
		anchors: []string{"ookie", "OOKIE"},
		begin:   cookieStart,
		// The value of a Cookie header (every name=value pair) or of a
		// Set-Cookie header (its one cookie's value, not the attributes),
		// as a header or a JSON or Python member. 1: Set-, 2: the Cookie
		// list, 3: the Set-Cookie value.
		re:     regexp.MustCompile(`^((?i:set-)?)(?i:cookie)(?:\\?["'])?[ \t]*:[ \t]*(?:\\?["'])?(?:([^=;\s"'\\][^\r\n"'\\]*)|)`),
		maxLen: 4096,
		secret: cookieSecret,
	},
	{
		id:      "contextfold-cookie",
		anchors: []string{"-b", "--cookie"},
		begin:   curlCookieStart,
		// curl's -b/--cookie 'NAME=VALUE; …' (a cookie jar's file name
		// holds no '='): the cookies sent, as a Cookie header's. 1:
		// double-quoted, 2: single-quoted, 3: bare.
		re:      regexp.MustCompile(`^(?:-b|--cookie)(?:[ \t]+|=)(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"']+))`),
		maxLen:  1024,
		oneLine: true,
		secret:  curlCookie,
	},
	{
		id:      "contextfold-cookie",
		anchors: []string{`"value"`},
		begin:   cookieObjectStart,
		// A cookie as a JSON object, the value member of an object that
		// also has "name" and "domain": a browser's cookie export, a
		// Playwright or Puppeteer storage state ({"name": "sid",
		// "value": "…", "domain": …}). 1: the value.
		re:      regexp.MustCompile(`^"value"[ \t]*:[ \t]*"([^"\\\r\n]*)"`),
		maxLen:  1024,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 8 && !isPlaceholder(v)
		},
	},
	{
		id:      "contextfold-netrc-password",
		anchors: []string{"password", "passwd"},
		begin:   netrcStart,
		// .netrc: "machine HOST login USER password VALUE", on one line or
		// several. 1: the value, quoted ("a b") or a run of non-blanks that
		// ends before a JSON escape or a quote that closes a JSON string
		// (\n"} or "} after it), not the JSON text's structure.
		re:     regexp.MustCompile(`^passw(?:or)?d[ \t]+("[^"\r\n]+"|(?:[^\s"\\]|"[^\s,}\]:"\\]|\\[^nrtbfu"\\/\s])+)`),
		maxLen: 1024,
		secret: netrcPassword,
	},
	{
		id:      "contextfold-auth-header",
		anchors: []string{"uthorization", "UTHORIZATION"},
		begin:   authHeaderStart,
		// The header name, its quote (plain or JSON-escaped), the
		// separator (':', '=', or the ", " between two call arguments),
		// the value's opening quote, 1: an optional scheme, then 2: the
		// credential, a token68 run.
		re:     regexp.MustCompile(`^(?i:proxy-)?(?i:authorization)(?:\\?["'])?[ \t]*(?:[:=]|=>|,)[ \t]*(?:\\?["'])?[ \t]*(?:([A-Za-z][A-Za-z0-9-]{1,20})[ \t]+)?([A-Za-z0-9._~+/-]{4,}=*)`),
		maxLen: 1024,
		secret: authCredential,
	},
	{
		id:      "contextfold-cli-password",
		anchors: cliPasswordAnchors,
		begin:   wordStart,
		// A password given on the command line (cliPasswordForms), on
		// the same command (no newline or shell separator before the
		// flag). 1: quoted (' or "), 2: bare.
		re:     regexp.MustCompile(`^(?:` + strings.Join(cliPasswordForms, "|") + `)(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"]+))`),
		maxLen: 512,
		secret: cliPassword,
		need:   cliPasswordNeeds,
	},
	{
		id:      "contextfold-password-line",
		anchors: []string{"password", "passwd", "bindpw", "rootpw"},
		begin:   wordStart,
		// A configuration line "password VALUE" with no operator
		// (msmtp's msmtprc, nslcd.conf's and ldap.conf's bindpw,
		// slapd.conf's rootpw), also inside JSON text; configPassword
		// vets the value. 1: the value, quoted or bare.
		re:      regexp.MustCompile(`^(?:passw(?:or)?d|bindpw|rootpw)[ \t]+("[^"\r\n]+"|[^\s"'\\]+)`),
		maxLen:  512,
		oneLine: true,
		secret:  configPassword,
	},
	{
		id:      "contextfold-oracle-password",
		anchors: []string{"sqlplus", "sqlcl", "expdp", "impdp", "rman", "sqlldr", "dgmgrl", "conn", "CONN", "userid", "USERID", "thin:"},
		begin:   wordStart,
		// Oracle's USER/PASSWORD[@CONNECT] logon: on the command line of
		// sqlplus, SQLcl, Data Pump, RMAN (target=), SQL*Loader and
		// DGMGRL, as a userid= parameter, in a CONNECT statement
		// (which must name a database with '@', prose says "connect
		// client/server") or a JDBC thin URL (jdbc:oracle:thin:USER/
		// PASSWORD@HOST…, '@' too). 1: the keyword, 2: the user, 3: the password,
		// 4: what follows it.
		re:      regexp.MustCompile(`^((?i:sqlplus|sql|sqlcl|expdp|impdp|rman|sqlldr|dgmgrl)(?:[ \t]+-\w+)*[ \t]+(?i:target[ \t]*=[ \t]*)?|(?i:conn|connect)[ \t]+|(?i:userid)[ \t]*=[ \t]*|thin:)["']?([A-Za-z][A-Za-z0-9_$#]*)/([^\s@/"'\\]+)(@|["'\s\\]|$)`),
		maxLen:  512,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[6]:m[7]]
			kw := strings.ToLower(strings.TrimRight(c[m[2]:m[3]], " \t"))
			if (kw == "conn" || kw == "connect" || kw == "thin:") && c[m[8]:m[9]] != "@" {
				return 0, 0, false
			}
			return m[6], m[7], len(v) >= 3 && !isPlaceholder(v)
		},
	},
	{
		id:      "contextfold-redis-auth",
		anchors: []string{"AUTH", "auth"},
		begin:   redisAuthStart,
		// Redis's AUTH [USER] PASSWORD typed at a redis-cli prompt
		// (host:port> AUTH …) or given to redis-cli as its command. 1:
		// the first word after AUTH, 2: the second (redisAuthSecret).
		re:      regexp.MustCompile(`^(?:AUTH|auth)[ \t]+("[^"\r\n]+"|'[^'\r\n]+'|[^\s'"\\]+)(?:[ \t]+("[^"\r\n]+"|'[^'\r\n]+'|[^\s'"\\]+))?`),
		maxLen:  512,
		oneLine: true,
		secret:  redisAuthSecret,
	},
	{
		id:      "contextfold-prose-secret",
		anchors: proseSecretAnchors,
		begin:   proseSecretStart,
		// A secret told in a sentence: "the db password is VALUE", "my
		// API key is `VALUE`", "the token was: VALUE", "the password for
		// root is now VALUE", "password for postgres: VALUE" (a user's
		// prompt, a chat message), and after a short name a note or a
		// chat gives a password ("db pass = VALUE", "pw: VALUE", "pass is
		// VALUE", "pw VALUE"). 1: the short name (pass, pwd, pw; not the
		// upper-case PASS of a test report), 2: the value, up to a blank
		// or a quote; proseSecret checks it. A quote may close the name
		// (PHP's 'password' => '…').
		re:      regexp.MustCompile("^(?:(?i:password|passwd|passphrase|token|secret|api[ _-]?key|access[ _-]?key|secret[ _-]?key|" + foreignPasswordWords + ")[\"']?(?:" + proseQualifier + "(?:" + proseVerb + "|" + proseOperator + ")|" + proseVerb + "|(" + proseOperator + "))|(pass|Pass|pwd|pw|Pw|PW)(?:" + proseQualifier + "(?:" + proseVerb + "|" + proseOperator + ")|" + proseVerb + "|" + proseOperator + "|[ \\t]+))[\"'`]?([^\\s\"'`\\\\]+)"),
		maxLen:  256,
		oneLine: true,
		secret:  proseSecret,
	},
	{
		id:      "contextfold-prose-secret",
		anchors: cjkSecretWords,
		begin:   func(text string, p int) int { return p },
		// The same in Chinese, Japanese and Korean, which join a particle
		// or a copula to the word and often the value to both: 密码是VALUE,
		// 新密码为VALUE, パスワードは「VALUE」です, 비밀번호는VALUE입니다,
		// API密钥：VALUE. These scripts have no word boundary, so the word
		// counts anywhere; the value is the run of printable ASCII after
		// it (the next CJK character ends it). 1: the value; cjkSecret
		// vets it as proseSecret does after a verb.
		re:      regexp.MustCompile("^(?:" + strings.Join(cjkSecretWords, "|") + ")(?:[ \t]*(?:" + cjkSecretLinks + ")){1,2}[ \t]*[\"'`「『“]?([!#-&(-\\[\\]-_a-~]+)"),
		maxLen:  256,
		oneLine: true,
		secret:  cjkSecret,
	},
	{
		id:      "contextfold-label-secret",
		anchors: []string{":\n", ":\r\n", ": \n"},
		begin:   labelLineStart,
		// A bare label on its own line and the secret alone on the next
		// (a terminal prompt's transcript, a README): "Password:" then
		// "  VALUE", "Enter passphrase for key '/root/.ssh/id_rsa':", a
		// blank line or a code fence between them allowed. labelSecret
		// reads the lines after the label.
		re:     regexp.MustCompile(`^[^\n]*\n`),
		maxLen: 512,
		secret: labelSecret,
	},
	{
		id:      "contextfold-label-secret",
		anchors: []string{"|"},
		begin:   tableLabelStart,
		// A Markdown table row whose label cell names a secret and whose
		// next cell holds it: "| Password | VALUE |" (a README's or a
		// wiki's credentials table). 1: the value, code marks left out.
		re:      regexp.MustCompile("^\\|[^|\\n]+\\|[ \\t]*`?([^\\s|`]+)`?[ \\t]*\\|"),
		maxLen:  512,
		oneLine: true,
		secret:  tableSecret,
	},
	{
		id:      "contextfold-call-secret",
		anchors: []string{`("`, `('`, `(\"`, `( "`, `( '`},
		begin:   callSecretStart,
		// A secret passed as a string literal to a setter or a builder
		// member named for it: setPassword("…"), withApiKey('…'),
		// .password("…"), set_token("…"), also JSON-escaped (\"…\"); and
		// the password of a two-argument login: db.auth("user", "…")
		// (the MongoDB shell), server.login("user", "…") (smtplib,
		// ftplib, imaplib). 1: the name, 2: a first argument (the user),
		// value: 3 double-quoted, 4 single-quoted, 5 escaped-quoted.
		re:      regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(?:[ \t]*=[ \t]*)?\([ \t]*((?:"[^"\r\n]*"|'[^'\r\n]*'|\\"[^"\\\r\n]*\\")[ \t]*,[ \t]*)?(?:"((?:[^"\\\r\n]|\\[^"\r\n])*)"|'([^'\\\r\n]*)'|\\"((?:[^"\\\r\n]|\\[^"\r\n])*)\\")[ \t]*\)`),
		maxLen:  1024,
		secret:  callSecret,
		oneLine: true,
	},
	{
		id:      "contextfold-actions-mask",
		anchors: []string{"::add-mask::"},
		begin:   func(_ string, p int) int { return p },
		// A GitHub Actions workflow command that masks a value in the
		// log: the value is a secret by definition, and the command
		// itself is printed when a step echoes it. 1: the value.
		re:      regexp.MustCompile(`^::add-mask::([^\s"'\\]+)`),
		maxLen:  1024,
		oneLine: true,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 4 && !isPlaceholder(v)
		},
	},
	{
		id:      "contextfold-keystore-password",
		anchors: []string{"storepass", "keypass", "-new"},
		begin:   keystoreOptionStart,
		// The JDK's keytool and jarsigner: -storepass, -keypass (also
		// -srcstorepass, -deststorepass, -srckeypass, -destkeypass) and
		// keytool's -new, each with its value after a blank, every one
		// of a command line (keystoreOptionStart); -storepass:env NAME
		// and -storepass:file PATH name no secret. 1: single-quoted, 2:
		// double-quoted, 3: bare.
		re:      regexp.MustCompile(`^-(?:(?:src|dest)?(?:store|key)pass|new)[ \t]+(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"]+))`),
		maxLen:  512,
		secret:  cliPassword,
		oneLine: true,
	},
	{
		id:      "contextfold-sql-password",
		anchors: []string{"IDENTIFIED", "identified", "PASSWORD", "password", "Password"},
		begin:   wordStart,
		// SQL: CREATE/ALTER USER … IDENTIFIED [WITH plugin] BY 'pw',
		// CREATE/ALTER ROLE|USER … [WITH] [ENCRYPTED] PASSWORD 'pw', SET
		// PASSWORD FOR user = 'pw': a password as a SQL string literal
		// (single quotes; not "password = '…'", a keyword argument the
		// env rule vets). 1: the literal's text.
		re:     regexp.MustCompile(`^(?i:identified(?:[ \t]+with[ \t]+\w+)?[ \t]+by[ \t]+(?:password[ \t]+)?|password(?:[ \t]+for[ \t]+\S+[ \t]*=)?[ \t]*(?:password[ \t]*\([ \t]*)?)'((?:[^'\n\\]|'')+)'`),
		maxLen: 512,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			return m[2], m[3], len(v) >= 4 && !isPlaceholder(v) && !placeholderPasswordSet[strings.ToLower(v)]
		},
	},
	{
		id:      "contextfold-config-secret",
		anchors: []string{"config"},
		begin:   wordStart,
		// A secret set through a tool's configuration command: aws
		// configure set aws_secret_access_key VALUE, npm config set
		// //registry/:_authToken VALUE, git config … VALUE. 1: the key,
		// value: 2 single-quoted, 3 double-quoted, 4 bare.
		re:     regexp.MustCompile(`^config(?:ure)?(?:[ \t]+--?[\w-]+(?:[ \t]+[\w.-]+)?)*?[ \t]+(?:set[ \t]+)?(?:--?[\w-]+[ \t]+)*([\w.:/@-]+)[ \t]+(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"=;&|]+))`),
		maxLen: 512,
		secret: keyedSecret(4),
	},
	{
		id:      "contextfold-xml-attr-secret",
		anchors: []string{"value=", "value ="},
		begin:   xmlAttrStart,
		// An XML element naming a secret in one attribute and holding it
		// in another: <add key="ApiKey" value="…"/> (.NET appSettings),
		// <property name="password" value="…"/> (Ant, Spring, Hibernate).
		// 1: the name, value: 2 double-quoted, 3 single-quoted.
		re:     regexp.MustCompile(`^<[A-Za-z][\w:.-]*(?:[ \t\r\n]+[\w:.-]+[ \t]*=[ \t]*(?:"[^"]*"|'[^']*'))*?[ \t\r\n]+(?:key|name)[ \t]*=[ \t]*["']([^"'<>]+)["'](?:[ \t\r\n]+[\w:.-]+[ \t]*=[ \t]*(?:"[^"]*"|'[^']*'))*?[ \t\r\n]+value[ \t]*=[ \t]*(?:"([^"]*)"|'([^']*)')`),
		maxLen: 1024,
		secret: keyedSecret(3),
	},
	{
		id:      "contextfold-xml-attr-secret",
		anchors: []string{`type="password"`, `type='password'`, `type=password`, `TYPE="PASSWORD"`},
		begin:   htmlInputStart,
		// An HTML password field's value: <input type="password"
		// value="…"> (a saved page, a test fixture, a server's template
		// rendered with it). 1: double-quoted, 2: single-quoted, 3: bare.
		re:     regexp.MustCompile(`^<(?i:input)\b[^<>]*?[ \t\r\n](?i:value)[ \t]*=[ \t]*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s"'<>]+))`),
		maxLen: 1024,
		secret: cliPassword,
	},
	{
		id:      "contextfold-env-secret",
		anchors: []string{"ENV ", "ENV\t"},
		begin:   dockerEnvStart,
		// A Dockerfile's legacy ENV NAME VALUE (no '='), NAME and VALUE
		// vetted as NAME=VALUE. 1: the name, 2: the value, quoted or bare.
		re:      regexp.MustCompile(`^ENV[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]+(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"']+))[ \t]*\r?(?:\n|$)`),
		maxLen:  1024,
		oneLine: true,
		secret:  keyedSecret(4),
	},
	{
		id:      "contextfold-bearer",
		anchors: []string{"Bearer", "bearer", "BEARER", "SSWS"},
		begin:   wordStart,
		// A bearer token outside an Authorization header ("using Bearer
		// …" in a log line, a variable holding "Bearer …"), and an Okta
		// API token after its scheme SSWS: 16+ token68 characters with a
		// digit. 1: the token.
		re:     regexp.MustCompile(`^(?i:bearer|ssws)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)`),
		maxLen: 4096,
		secret: func(c string, m []int) (int, int, bool) {
			v := c[m[2]:m[3]]
			// A JWT is contextfold-jwt's (its label says more).
			return m[2], m[3], !isPlaceholder(v) && strings.ContainsAny(v, "0123456789") && !strings.HasPrefix(v, "eyJ")
		},
	},
	{
		id:      "contextfold-pgpass",
		anchors: []string{":"},
		begin:   pgpassStart,
		// A PostgreSQL password file line (~/.pgpass, PGPASSFILE):
		// hostname:port:database:username:password, each field a name or
		// '*', ':' and '\' escaped by '\'. 1: host, 2: the password,
		// which runs to the end of the line, a quote, an escape, or an
		// unescaped ':' (where libpq ends it too).
		re:      regexp.MustCompile(`^([A-Za-z0-9._\[\]*%/-]+):(?:[0-9]{1,5}|\*):(?:\\.|[^:\s\\"'])+:(?:\\.|[^:\s\\"'])+:((?:\\[:\\]|[^:\s\\"'])+)(?:$|[\s"'\\:])`),
		maxLen:  1024,
		secret:  pgpassSecret,
		oneLine: true,
	},
	{
		id:      "contextfold-login-password",
		anchors: []string{"-p"},
		begin:   loginPasswordStart,
		// "-p PASSWORD", "-p'PASSWORD'", "-p=PASSWORD" on a command line
		// that logs in ("docker login -u USER -p …", "az login -u … -p …",
		// "mongosh … -p …"): a user option or a login subcommand on the
		// same line (see loginPasswordStart). 1: quoted, 2: bare
		// after a blank or '=', 3: bare attached.
		re:     regexp.MustCompile(`^-p(?:[ \t]+|=)?(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"\\;&|` + "`" + `]+))`),
		maxLen: 512,
		secret: loginPassword,
	},
	{
		id:      "contextfold-stdin-password",
		anchors: []string{"echo", "printf"},
		begin:   wordStart,
		// A password piped into a command that reads it from standard
		// input: "echo PW | docker login --password-stdin", "printf '%s'
		// PW | helm registry login --password-stdin", "echo PW | sudo -S
		// …", "echo USER:PW | chpasswd", "echo PW | passwd --stdin USER".
		// 1: single-quoted, 2: double-quoted, 3: bare.
		re:     regexp.MustCompile(`^(?:echo(?:[ \t]+-[neE]+)*|printf(?:[ \t]+(?:'%s[^']*'|"%s[^"]*"|%s))?)[ \t]+(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"|;&]+))[ \t]*\|(?:[^\n;&|]*--pass(?:word)?-stdin|[ \t]*sudo(?:[ \t]+-[A-Za-z]+)*?[ \t]+-[A-Za-z]*S|[ \t]*chpasswd|[^\n;&|]*\bpasswd[ \t]+--stdin)`),
		maxLen: 1024,
		secret: cliPassword,
	},
	{
		id:      "contextfold-private-key-block",
		anchors: []string{"-----BEGIN"},
		begin:   func(_ string, p int) int { return p },
		re:      regexp.MustCompile(`^-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|$)`),
	},
	{
		// The end of a private key block whose BEGIN line is in another
		// text (a key cut by a message boundary: the next message starts
		// in its body): the body lines before the END line, from the
		// first of them (pemBodyStart).
		id:      "contextfold-private-key-block",
		anchors: []string{"-----END"},
		begin:   pemBodyStart,
		re:      regexp.MustCompile(`^(?:[A-Za-z0-9+/=]+[ \t]*\r?\n)+-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`),
		maxLen:  pemBodyMax + 256,
	},
	{
		id:      "contextfold-jwt",
		anchors: []string{"eyJ"},
		begin:   wordStart,
		re:      regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`),
		// An "eyJ" inside the run of the header that failed ends its
		// header where that one ends, and fails the same way (the runs
		// hold no '.', so where each part ends is fixed): 1 MiB of
		// "eyJ-" repeated read the rest of the text from every one.
		failedUntil: func(text string, b int) int { return base64URLRunEnd(text, b+3) },
	},
	{
		id:      "contextfold-aws-access-key-id",
		anchors: []string{"AKIA", "ASIA", "ABIA", "ACCA"},
		begin:   wordStart,
		re:      regexp.MustCompile(`^((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?:[^A-Za-z0-9]|$)`),
		maxLen:  64,
		secret:  func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-llm-api-key",
		anchors: []string{"sk-"},
		begin:   wordStart,
		re:      regexp.MustCompile(`^sk-(?:ant-[a-z]+[0-9]{2}-|proj-|svcacct-|admin-)[A-Za-z0-9_-]{20,}`),
	},
	{
		id:      "contextfold-telegram-bot-token",
		anchors: []string{":A"},
		begin:   telegramTokenStart,
		// A Telegram bot token, BOTID:SECRET (the secret starts with A),
		// bare: in a Bot API URL (api.telegram.org/botTOKEN/getMe) or a
		// constructor's argument. Gitleaks' rule wants "telegr" and an
		// operator before it. 1: the token.
		re:     regexp.MustCompile(`^([0-9]{5,16}:A[A-Za-z0-9_-]{34})`),
		maxLen: 64,
		secret: func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-discord-bot-token",
		anchors: []string{"."},
		begin:   discordTokenStart,
		// A Discord bot token, USERID.TIMESTAMP.HMAC, the user id base64
		// encoded (client.run('…'), a bot's config): gitleaks' Discord
		// rules want "discord" and an operator before it. The first part
		// must decode to the digits of a user id (discordTokenStart), so a
		// dotted name or version is never read as one.
		re:     regexp.MustCompile(`^[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}`),
		maxLen: 96,
	},
	{
		id:      "contextfold-twilio-auth-token",
		anchors: []string{"AC"},
		begin:   wordStart,
		// A Twilio auth token given with its account SID, the pair as a
		// call's arguments (Client('ACSID', 'TOKEN')) or as USER:PASSWORD
		// (ACSID:TOKEN): 32 hex digits after AC and 32 more. Gitleaks
		// knows the SID and API keys (SK…), not the token. 1: the token.
		re:     regexp.MustCompile(`^AC[0-9a-f]{32}["']?[ \t]*[,:][ \t]*["']?([0-9a-f]{32})(?:[^0-9A-Za-z]|$)`),
		maxLen: 96,
		secret: func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-vendor-token",
		anchors: []string{"whsec_", "NRAK-", "NRII-", "NRJS-", "-us"},
		begin:   vendorTokenStart,
		// Tokens whose prefix or suffix names the vendor, which gitleaks
		// finds only after the vendor's name and an operator, or not at
		// all: a Stripe webhook signing secret (whsec_…), New Relic's
		// user, insert and browser keys (NRAK-, NRII-, NRJS-) and a
		// Mailchimp API key (32 hex digits, -usNN: its data centre).
		// 1: the token.
		re:     regexp.MustCompile(`^(whsec_[A-Za-z0-9+/]{24,}|NR(?:AK-[A-Za-z0-9]{27}|II-[A-Za-z0-9_-]{32}|JS-[a-f0-9]{19})|[a-f0-9]{32}-us[0-9]{1,2})(?:[^A-Za-z0-9]|$)`),
		maxLen: 128,
		secret: func(_ string, m []int) (int, int, bool) { return m[2], m[3], true },
	},
	{
		id:      "contextfold-curl-user",
		anchors: []string{"curl"},
		begin:   wordStart,
		// curl's -u/--user USER:PASSWORD on the same command, also as an
		// argument vector (["curl", "-u", "admin:…"], argv.go), which
		// gitleaks' curl-auth-user does not read. 1: single-quoted, 2:
		// double-quoted, 3: bare. The password is redacted (the whole
		// value when it has no ':' or ends in one: a token as the user).
		re:      regexp.MustCompile(`^curl(?:[ \t]+[^\s;&|]+)*?[ \t]+(?:-u|--user)(?:[ \t]+|=)?(?:'([^'\n]+)'|"([^"\n]+)"|([^\s'"]+))`),
		maxLen:  512,
		secret:  curlUserSecret,
		oneLine: true,
	},
	{
		id:      "contextfold-userinfo-password",
		anchors: []string{"@"},
		begin:   userinfoStart,
		// USER:PASSWORD@HOST with no scheme (admin:pw@db.internal:5432,
		// git clone user:token@github.com/org/repo): 1: the password,
		// 2: the host, a name with a '.' or a port after it, or an IPv4
		// address (userinfoSecret vets it).
		re:      regexp.MustCompile(`^[A-Za-z0-9._%+-]+:([^\s:/@'"\\<>()\[\]{}]{3,})@([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*)(:[0-9]{1,5})?`),
		maxLen:  1024,
		secret:  userinfoSecret,
		oneLine: true,
	},
	{
		id:      "contextfold-putty-private-key",
		anchors: []string{"Private-Lines:"},
		begin:   func(_ string, p int) int { return p },
		// The private part of a PuTTY key file (PuTTY-User-Key-File-2/3):
		// the base64 lines after "Private-Lines: N". 1: the lines.
		re:     regexp.MustCompile(`^Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n((?:[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|$))+)`),
		maxLen: pemBodyMax,
		secret: func(c string, m []int) (int, int, bool) {
			e := m[3]
			for e > m[2] && (c[e-1] == '\n' || c[e-1] == '\r' || c[e-1] == ' ' || c[e-1] == '\t') {
				e--
			}
			return m[2], e, true
		},
	},
	{
		id:      "contextfold-google-oauth-token",
		anchors: []string{"ya29."},
		begin:   wordStart,
		// A Google OAuth 2.0 access token (ya29.…): gitleaks has no rule
		// for it, and its generic rule needs a secret-like key before it.
		// The token may hold '.' between its runs, not at its end.
		re:     regexp.MustCompile(`^ya29\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*`),
		maxLen: 4096,
		secret: func(c string, m []int) (int, int, bool) { return m[0], m[1], m[1] >= 25 },
	},
	{
		id:      "contextfold-webhook-url",
		anchors: []string{"hooks.slack.com/", "/webhooks/"},
		begin:   func(_ string, p int) int { return p },
		// The secret path of a Slack incoming webhook or workflow trigger
		// (hooks.slack.com/services/T…/B…/…, /workflows/…, /triggers/…;
		// gitleaks' slack-webhook-url stops after 56 characters) and the
		// token of a Discord webhook (/api/webhooks/ID/TOKEN, also
		// /api/v10/webhooks/…). 1: Slack's path, 2: Discord's token.
		re:      regexp.MustCompile(`^(?:hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})|/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,100}))`),
		maxLen:  512,
		secret:  func(_ string, m []int) (int, int, bool) { return valueGroup(m, 1, 2) },
		oneLine: true,
	},
	{
		id:      "contextfold-plist-secret",
		anchors: []string{"<key>"},
		begin:   func(_ string, p int) int { return p },
		// A property list's <key>NAME</key> followed by <string>VALUE</string>
		// (macOS and iOS configuration, keychain exports), NAME vetted as
		// NAME=VALUE is. 1: the name, 2: the value.
		re:     regexp.MustCompile(`^<key>[ \t]*([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*</key>\s*<string>([^<>\r\n]+)</string>`),
		maxLen: 1024,
		secret: keyedSecret(2),
	},
	{
		id:      "contextfold-docker-auth",
		anchors: []string{`"auth"`},
		begin:   func(_ string, p int) int { return p },
		// A Docker or Podman config.json (auths) entry "auth": "BASE64",
		// the base64 of USER:PASSWORD (dockerAuthSecret checks that it
		// decodes to one). 1: the value.
		re:      regexp.MustCompile(`^"auth"[ \t]*:[ \t]*"([A-Za-z0-9+/]{4,}={0,2})"`),
		maxLen:  1024,
		secret:  dockerAuthSecret,
		oneLine: true,
	},
}

// extraFindings runs our extra rules over text.
func extraFindings(text string) []Finding {
	if text == "" {
		return nil
	}
	as := extraAnchors()
	h := anchorHitsPool.Get().(*anchorHits)
	defer h.release()
	as.find(text, h)
	var out []Finding
	for ri, r := range extraRules {
		last := -1 // candidate starts already tried
		// covered is the end of the last secret the current anchor gave.
		covered := 0
		var need []string // the current anchor's (extraRule.need)
		failed := 0       // the current anchor's extraRule.failedUntil
		try := func(p int) {
			b := r.begin(text, p)
			if b < 0 || b == last {
				return
			}
			last = b
			end := len(text)
			if r.maxLen > 0 && b+r.maxLen < end {
				end = b + r.maxLen
			}
			if r.oneLine {
				if k := strings.IndexByte(text[b:end], '\n'); k >= 0 {
					end = b + k + 1
				}
			}
			cand := text[b:end]
			if need != nil && !containsAny(cand, need) {
				return
			}
			m := r.re.FindStringSubmatchIndex(cand)
			if m == nil {
				if r.failedUntil != nil {
					failed = max(failed, r.failedUntil(text, b))
				}
				return
			}
			if r.multi != nil {
				for _, sp := range r.multi(cand, m) {
					out = append(out, Finding{RuleID: r.id, Start: b + sp[0], End: b + sp[1]})
				}
				return
			}
			s, e, ok := m[0], m[1], true
			if r.secret != nil {
				s, e, ok = r.secret(cand, m)
			}
			if ok && e > s {
				out = append(out, Finding{RuleID: r.id, Start: b + s, End: b + e})
				covered = max(covered, b+e)
			}
		}
		for _, ak := range as.rule[ri] {
			// The anchor's occurrences that do not overlap the one taken
			// before, from the text's start (as strings.Index finds them
			// one after the other).
			n := len(as.lits[ak])
			need = r.need[as.lits[ak]]
			off, pending := 0, -1
			covered, failed = 0, 0
			for _, p := range h.positions(ak) {
				if p < off || p < failed {
					continue
				}
				off = p + n
				if extraSkipCovered && p+n < covered {
					// Inside a secret found from an earlier occurrence
					// (coveredSkip): only the last such occurrence is
					// tried, when the secret ends.
					pending = p
					continue
				}
				if pending >= 0 {
					try(pending)
					pending = -1
					if p+n < covered {
						pending = p
						continue
					}
				}
				try(p)
			}
			if pending >= 0 {
				try(pending)
			}
		}
	}
	return out
}

// extraSkipCovered turns on coveredSkip in extraFindings (tests compare
// with and without).
var extraSkipCovered = true

// coveredSkip. An anchor occurrence that lies inside a secret the same
// rule found from an earlier occurrence of that anchor (its end at least
// one byte past the anchor) is not tried, but the last of such a run is,
// once the occurrences pass the secret's end: what it finds there is
// redacted already, or runs on past the secret (a value that ends where
// the earlier one was cut, a NAME: VALUE whose name ends the earlier
// value). A text of one anchor repeated, api_key=api_key=… or ya29.ya29.…,
// gave a secret of up to the rule's maxLen bytes at every occurrence: 1
// MiB of it took minutes to scrub (the regular expression over 4 KiB per
// occurrence, then the repeat pass over some 100,000 long values). Real
// text gives the same findings (TestCoveredSkipSame).

// pemBodyMax bounds the body a private key's END line is looked back over
// (bytes): an RSA 8192-bit key's is about 6.3 KB.
const pemBodyMax = 16 << 10

// pemBodyStart accepts an END line of a private key block that starts a
// line and follows at least one body line (base64 characters alone, 16 or
// more) and returns where the first of those body lines starts: the start
// of the text, the line after one that is not a body line, or the base64
// run that ends such a line (after a quote, a JSON key, a label). A block
// whose BEGIN line is there too is matched from it by the rule that reads
// whole blocks as well; this one finds the part a message boundary left
// without it.
func pemBodyStart(text string, p int) int {
	if p > 0 && text[p-1] != '\n' {
		return -1
	}
	start := -1
	for le := p - 1; le > 0 && p-le < pemBodyMax; {
		ls := strings.LastIndexByte(text[:le], '\n') + 1
		line := strings.TrimRight(text[ls:le], " \t\r")
		k := len(line) // the base64 run that ends the line
		for k > 0 && (base64Byte(line[k-1]) && line[k-1] != '-' && line[k-1] != '_') {
			k--
		}
		if len(line)-k < 16 {
			break
		}
		start = ls + k
		if k > 0 {
			break // the first body line, after a quote or a label
		}
		le = ls - 1
	}
	return start
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// wordStart accepts an anchor only at a word boundary (like \b before it),
// where '_' and an escape just before count as one (see above).
func wordStart(text string, p int) int {
	if p > 0 && isWordByte(text[p-1]) && text[p-1] != '_' && escapeBefore(text, p) == 0 {
		return -1
	}
	return p
}

// telegramTokenStart accepts the ":A" of a Telegram bot token after 5 to
// 16 digits that start a word or follow the Bot API's "/bot"
// (api.telegram.org/botID:SECRET/getMe), and returns where the digits
// start; -1 otherwise.
func telegramTokenStart(text string, p int) int {
	b := p
	for b > 0 && p-b <= 16 && text[b-1] >= '0' && text[b-1] <= '9' {
		b--
	}
	if p-b < 5 || p-b > 16 {
		return -1
	}
	if b >= 4 && text[b-4:b] == "/bot" {
		return b
	}
	return wordStart(text, b)
}

// discordTokenStart accepts the first '.' of a Discord bot token: after
// 23 to 28 base64url characters that start a word and decode to the 17 to
// 20 digits of a user id. It returns where they start, -1 otherwise.
func discordTokenStart(text string, p int) int {
	b := p
	for b > 0 && p-b <= 28 && (isWordByte(text[b-1]) && text[b-1] != '_' || text[b-1] == '-') {
		b--
	}
	if n := p - b; n < 23 || n > 28 || text[b] < 'M' || text[b] > 'O' || wordStart(text, b) < 0 {
		return -1
	}
	id, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(text[b:p], "="))
	if err != nil || len(id) < 17 || len(id) > 20 {
		return -1
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return -1
		}
	}
	return b
}

// vendorTokenStart accepts an anchor of contextfold-vendor-token: a prefix
// that starts a word, or Mailchimp's "-us" after 32 hex digits that start
// one; it returns where the token starts, -1 otherwise.
func vendorTokenStart(text string, p int) int {
	if !strings.HasPrefix(text[p:], "-us") {
		return wordStart(text, p)
	}
	b := p - 32
	if b < 0 {
		return -1
	}
	for i := b; i < p; i++ {
		if c := text[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return -1
		}
	}
	return wordStart(text, b)
}

// escapeBefore returns the length of the JSON or C escape (\n, \r, \t, \b,
// \f: 2; \uXXXX: 6) that ends at p, or 0 when there is none. A backslash
// that is itself escaped (\\n: a backslash, then n) starts no escape.
func escapeBefore(text string, p int) int {
	n := 0
	switch {
	case p >= 2 && strings.IndexByte("nrtbf", text[p-1]) >= 0:
		n = 2
	case p >= 6 && text[p-5] == 'u' && isHex(text[p-4:p]):
		n = 6
	default:
		return 0
	}
	k := 0 // backslashes before the escape's letter
	for i := p - n; i >= 0 && text[i] == '\\'; i-- {
		k++
	}
	if k%2 == 1 {
		return n
	}
	return 0
}

// skipEscapeLetters moves a name start b that sits on the letters of an
// escape ("\nTOKEN", "\u0026TOKEN") past them, up to j.
func skipEscapeLetters(text string, b, j int) int {
	if b == 0 || text[b-1] != '\\' {
		return b
	}
	for n := 6; n >= 2; n -= 4 {
		if b+n-1 <= j && escapeBefore(text, b+n-1) == n {
			return b + n - 1
		}
	}
	return b
}

// urlSchemeStart walks back from "://" over the scheme.
func urlSchemeStart(text string, p int) int {
	b := p
	for b > 0 && p-b < 32 {
		c := text[b-1]
		if isWordByte(c) && c != '_' || c == '+' || c == '.' || c == '-' {
			b--
			continue
		}
		break
	}
	for b < p && !(text[b] >= 'a' && text[b] <= 'z' || text[b] >= 'A' && text[b] <= 'Z') {
		b++ // a scheme starts with a letter
	}
	if b == p || (b > 0 && isWordByte(text[b-1]) && text[b-1] != '_' && escapeBefore(text, b) == 0) {
		return -1
	}
	return b
}

// envNameStart walks back from "=" over blanks and the variable name; it
// rejects ==, !=, <=, >= and =>.
func envNameStart(text string, p int) int {
	if p+1 < len(text) && (text[p+1] == '=' || text[p+1] == '>') {
		return -1
	}
	if p > 0 && strings.IndexByte("=!<>:+-*/%&|^", text[p-1]) >= 0 && !(text[p-1] == '-' && p > 1 && isWordByte(text[p-2])) {
		return -1
	}
	j := p
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
		j--
	}
	// A quoted subscript: ["NAME"] =, ['NAME'] =, [\"NAME\"] =.
	if k := subscriptNameEnd(text, j); k >= 0 {
		j = k
	}
	b := j
	for b > 0 && j-b < 256 && (isWordByte(text[b-1]) || text[b-1] == '.' || text[b-1] == '-') {
		b--
	}
	b = skipEscapeLetters(text, b, j)
	// The name starts with a letter or '_' (skips "--" of --password=…).
	for b < j && !(text[b] == '_' || text[b] >= 'a' && text[b] <= 'z' || text[b] >= 'A' && text[b] <= 'Z') {
		b++
	}
	if b == j || !maybeSecretName(text[b:j]) || !secretName(text[b:j]) {
		return -1
	}
	return b
}

// urlSignatureNames are the query parameters contextfold-url-signature
// reads, longest first.
var urlSignatureNames = []string{"x-goog-signature", "x-amz-signature", "signature", "sig"}

// urlSignatureStart returns where the signature parameter whose anchor is
// at p starts, when it is a URL query parameter: the name (one of
// urlSignatureNames, any case) follows '?', '&', "&amp;", "%26" or the
// JSON escape \u0026.
func urlSignatureStart(text string, p int) int {
	eq := strings.IndexByte(text[p:], '=')
	if eq < 0 {
		return -1
	}
	eq += p
	for _, n := range urlSignatureNames {
		b := eq - len(n)
		if b < 1 || !strings.EqualFold(text[b:eq], n) {
			continue
		}
		head := text[:b]
		if c := head[len(head)-1]; c == '?' || c == '&' || strings.HasSuffix(head, "&amp;") ||
			strings.HasSuffix(head, "%26") || strings.HasSuffix(head, `\u0026`) {
			return b
		}
		return -1
	}
	return -1
}

// namedSecretStart accepts a name member's key (contextfold-named-secret)
// that starts a word: "name", 'name', \"name\", a bare YAML key.
func namedSecretStart(text string, p int) int {
	if p > 0 && isWordByte(text[p-1]) && escapeBefore(text, p) == 0 {
		return -1
	}
	return p
}

// subscriptNameEnd returns where the name of a quoted subscript ending at j
// ends (j just after its ']': text[:j] ends in ["NAME"], ['NAME'] or
// [\"NAME\"], blanks allowed before the ']'), or -1 when text[:j] does not
// end in one. The quote must be the one that opened the subscript.
func subscriptNameEnd(text string, j int) int {
	if j == 0 || text[j-1] != ']' {
		return -1
	}
	k := j - 1
	for k > 0 && (text[k-1] == ' ' || text[k-1] == '\t') {
		k--
	}
	if k == 0 || (text[k-1] != '"' && text[k-1] != '\'') {
		return -1
	}
	q := text[k-1]
	end := k - 1
	esc := end > 0 && text[end-1] == '\\'
	if esc {
		end--
	}
	b := end
	for b > 0 && end-b < 256 && (isWordByte(text[b-1]) || text[b-1] == '.' || text[b-1] == '-') {
		b--
	}
	open := b - 1
	if esc {
		open--
	}
	if b == end || open < 1 || text[b-1] != q || (esc && text[b-2] != '\\') {
		return -1
	}
	for open > 0 && (text[open-1] == ' ' || text[open-1] == '\t') {
		open--
	}
	if open < 1 || text[open-1] != '[' {
		return -1
	}
	return end
}

// keyNameStart walks back from ':' over blanks, the closing quote of a
// quoted key (plain or JSON-escaped) and the key; it rejects "::" (a
// scope, an IPv6 address) and a URL scheme's "://".
func keyNameStart(text string, p int) int {
	if p+1 < len(text) && (text[p+1] == ':' || text[p+1] == '/' || text[p+1] == '=') {
		// LDIF's base64 value (userPassword:: BASE64) is a name's value;
		// "::" elsewhere is a path (std::string, a Rust or Ruby name).
		if text[p+1] != ':' || p+2 >= len(text) || text[p+2] != ' ' {
			return -1
		}
	}
	if p > 0 && text[p-1] == ':' {
		return -1
	}
	j := p
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
		j--
	}
	quoted := false
	if j > 0 && (text[j-1] == '"' || text[j-1] == '\'') {
		quoted = true
		j--
		if j > 0 && text[j-1] == '\\' {
			j--
		}
	} else if j > 0 && text[j-1] == '*' { // Markdown's **Password**:
		j--
		if j > 0 && text[j-1] == '*' {
			j--
		}
	}
	b := j
	for b > 0 && j-b < 256 && (isWordByte(text[b-1]) || text[b-1] == '.' || text[b-1] == '-') {
		b--
	}
	b = skipEscapeLetters(text, b, j)
	for b < j && !(text[b] == '_' || text[b] >= 'a' && text[b] <= 'z' || text[b] >= 'A' && text[b] <= 'Z') {
		b++
	}
	if b == j || !maybeSecretName(text[b:j]) || !secretName(text[b:j]) {
		return -1
	}
	// "--- PASS: TestName (0.01s)" is a test result, not a key; a quoted
	// "pass": is a JSON or Python member.
	if !quoted && strings.EqualFold(text[b:j], "pass") {
		return -1
	}
	return b
}

// maybeSecretName reports whether acceptEnvSecret can accept a value under
// name; it spares the regular expression the many keys (JSON members, log
// fields) that can never name a secret.
func maybeSecretName(name string) bool {
	name = unnumbered(name)
	k := len(name)
	for k > 0 && name[k-1] != '_' && name[k-1] != '-' && name[k-1] != '.' {
		k--
	}
	last := strings.ToUpper(name[k:])
	return isSecretWord(last) || last == "KEY" || last == "ID" || joinedQualifiedKey(last)
}

// joinedQualifiedKey reports whether the upper-case name component c is a
// qualifier of keyQualifiers joined to KEY, as a camelCase name writes it:
// SECRETACCESSKEY (AWS STS's "SecretAccessKey"), ACCESSKEY, PRIVATEKEY,
// SIGNINGKEY.
func joinedQualifiedKey(c string) bool {
	rest, ok := strings.CutSuffix(c, "KEY")
	if !ok {
		return false
	}
	for q := range keyQualifiers {
		if strings.HasSuffix(rest, q) {
			return true
		}
	}
	return false
}

// secretSuffixes are the secret words that also make a name component
// secret when they end it: PGPASSWORD, DBPASSWORD, VAULTTOKEN, GPGPASSPHRASE
// (not PASS or PWD: BYPASS, COMPASS).
var secretSuffixes = []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY"}

// isSecretWord reports whether the upper-case name component c is a secret
// word of secretLast or ends with one of secretSuffixes.
func isSecretWord(c string) bool {
	if secretLast[c] {
		return true
	}
	for _, w := range secretSuffixes {
		if strings.HasSuffix(c, w) {
			return true
		}
	}
	return false
}

// spacedSecretAnchors are the endings of a secret name followed by a blank
// (contextfold-spaced-secret): the rule's candidates are found where a
// name of that kind ends, never at every blank.
var spacedSecretAnchors = []string{
	"ecret ", "ecret\t", "ECRET ", "ECRET\t",
	"oken ", "oken\t", "OKEN ", "OKEN\t",
	"ey ", "ey\t", "EY ", "EY\t",
	"assword ", "assword\t", "ASSWORD ", "ASSWORD\t",
	"asswd ", "ASSWD ", "assphrase ", "ASSPHRASE ",
}

// spacedNameStart accepts an anchor of contextfold-spaced-secret that ends
// a compound secret name (two components or more: client_secret,
// API-KEY, db.password, clientSecret) starting a word; the name is
// returned as the candidate's start, -1 when there is none. A single word
// ("password", "token", "key") is not enough without an operator: prose
// says "the token abc123".
func spacedNameStart(text string, p int) int {
	j := p
	for j < len(text) && text[j] != ' ' && text[j] != '\t' {
		j++
	}
	b := j
	for b > 0 && j-b < 128 && (isWordByte(text[b-1]) || text[b-1] == '.' || text[b-1] == '-') {
		b--
	}
	b = skipEscapeLetters(text, b, j)
	for b < j && !(text[b] == '_' || text[b] >= 'a' && text[b] <= 'z' || text[b] >= 'A' && text[b] <= 'Z') {
		b++
	}
	if b == j || wordStart(text, b) < 0 {
		return -1
	}
	if b > 0 && (text[b-1] == '-' || text[b-1] == '$') {
		return -1 // an option (contextfold-flag-secret's) or a variable's expansion
	}
	name := text[b:j]
	if !compoundName(name) || !maybeSecretName(name) && !isSecretWord(strings.ToUpper(name)) {
		return -1
	}
	return b
}

// compoundName reports whether name has two components or more: joined by
// '_', '-' or '.', or a lower-case letter followed by an upper-case one.
func compoundName(name string) bool {
	for i := 1; i < len(name)-1; i++ {
		c := name[i]
		if c == '_' || c == '-' || c == '.' {
			return true
		}
		if c >= 'A' && c <= 'Z' && name[i-1] >= 'a' && name[i-1] <= 'z' {
			return true
		}
	}
	return false
}

// spacedSecret vets a NAME VALUE candidate: the value must look like a
// credential, not a word of prose or code: 12+ characters mixing letters
// and digits, not an identifier in snake_case (a variable's name), and the
// name and value must pass as NAME=VALUE would (acceptEnvSecret).
func spacedSecret(c string, m []int) (int, int, bool) {
	name, v := c[m[2]:m[3]], c[m[4]:m[5]]
	if len(v) < 12 || !hasLetterAndDigit(v) || snakeIdentifier(v) {
		return 0, 0, false
	}
	return m[4], m[5], acceptEnvSecret(name, v)
}

// snakeIdentifier reports whether v is a lower-case identifier holding '_'
// (my_api_key_2): a name in code, not a credential.
func snakeIdentifier(v string) bool {
	under := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '_':
			under = true
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return under
}

// flagStart accepts "--" that starts a word and names a possible secret:
// after the start of the text, any punctuation ("/--token", "|--token",
// "[--token"), '_' or a JSON escape, not after a letter or a digit
// ("a--token" is one word). A longer run of dashes ("x---token") counts
// from its last two.
func flagStart(text string, p int) int {
	if p+3 < len(text) && text[p+2] == '-' && text[p+3] == '-' {
		// The "--" at p+2 is an anchor too and starts the same candidate:
		// a run of n dashes is walked once, not n/2 times.
		return -1
	}
	for p+2 < len(text) && text[p+2] == '-' {
		p++
	}
	if wordStart(text, p) < 0 {
		return -1
	}
	j := p + 2
	for j < len(text) && j-p < 256 && (isWordByte(text[j]) || text[j] == '.' || text[j] == '-') {
		j++
	}
	if j == p+2 || !maybeSecretName(text[p+2:j]) {
		return -1
	}
	return p
}

// flagSecret vets a --name VALUE candidate like NAME=VALUE; a value that is
// itself an option (-x, --flag) is not one.
func flagSecret(c string, m []int) (int, int, bool) {
	s, e, ok := valueGroup(m, 2, 4)
	return s, e, ok && !strings.HasPrefix(c[s:e], "-") && acceptEnvSecret(c[m[2]:m[3]], c[s:e])
}

// xmlStart accepts "<" followed by a tag name that may name a secret.
func xmlStart(text string, p int) int {
	j := p + 1
	for j < len(text) && j-p < 256 && (isWordByte(text[j]) || text[j] == '.' || text[j] == '-' || text[j] == ':') {
		j++
	}
	if j == p+1 || j >= len(text) || text[j] != '>' {
		return -1
	}
	name := text[p+1 : j]
	if k := strings.LastIndexByte(name, ':'); k >= 0 {
		name = name[k+1:] // a namespace prefix
	}
	if !maybeSecretName(name) {
		return -1
	}
	return p
}

// xmlSecret vets <name>VALUE</name> like NAME=VALUE.
func xmlSecret(c string, m []int) (int, int, bool) {
	open, closing := c[m[2]:m[3]], c[m[6]:m[7]]
	if open != closing {
		return 0, 0, false
	}
	if k := strings.LastIndexByte(open, ':'); k >= 0 {
		open = open[k+1:]
	}
	v := strings.TrimSpace(c[m[4]:m[5]])
	return m[4], m[5], acceptEnvSecret(open, v)
}

// cliPassword returns the span of a command-line password that is not a
// placeholder ($MYSQL_PWD, <password>).
func cliPassword(c string, m []int) (int, int, bool) {
	for g := 1; g <= 3; g++ {
		if m[2*g] >= 0 {
			s, e := m[2*g], m[2*g+1]
			v := c[s:e]
			// redis.conf's example, bare or before a JSON escape.
			redisExample := v == "foobared" || strings.HasPrefix(v, "foobared\\")
			if k := strings.IndexByte(v, '\\'); g == 3 && k >= 0 {
				v = v[:k] // a bare value before an escape (the line's end, JSON-escaped)
			}
			// An option is no password ("openssl passwd -help").
			return s, e, !isPlaceholder(v) && !redisExample && v[0] != '-'
		}
	}
	return 0, 0, false
}

// cliPasswordForms are the commands and flags of contextfold-cli-password,
// each up to where the password starts:
//   - the MySQL/MariaDB clients' -pPASSWORD (no space: "-p NAME" prompts
//     and NAME is the database), 7-Zip's -pPASSWORD and RAR's -p/-hp the
//     same way;
//   - sshpass -p, redis-cli -a, smbclient/rpcclient/smbmap -U user%PASSWORD,
//     htpasswd -b FILE USER PASSWORD, zip/unzip -P, ssh-keygen -N/-P,
//     the OpenLDAP clients' -w, openssl's -k and pass:PASSWORD (-passin,
//     -passout, -password);
//   - PowerShell's ConvertTo-SecureString "PASSWORD" -AsPlainText;
//   - Redis's requirepass and masterauth, in redis.conf or CONFIG SET
//     (redis.conf's own example, "foobared", is a placeholder);
//   - lftp -u USER,PASSWORD;
//   - SQL Server's sqlcmd/bcp/osql/isql -P PASSWORD, rabbitmqctl add_user
//     or change_password USER PASSWORD, Windows' net use … /user:USER
//     PASSWORD, openssl passwd [-6] PASSWORD.
//
// The JDK's keytool and jarsigner, which take several passwords on one
// command line, are contextfold-keystore-password's.
var cliPasswordForms = []string{
	`(?:mysql[a-z]*|mariadb[a-z-]*)[^\n;&|]{0,300}?[ \t]-p`,
	`sshpass(?:[ \t]+-[a-oq-z]\S*)*[ \t]+-p[ \t]*`,
	`redis-cli[^\n;&|]{0,300}?[ \t]-a[ \t]+`,
	`(?:smbclient|rpcclient|smbmap)[^\n;&|]{0,300}?[ \t](?:-U[ \t]*|--user=)['"]?[^\s%'"]+%`,
	`htpasswd(?:[ \t]+-[A-Za-z]*)*[ \t]+-[A-Za-z]*b[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*[ \t]+\S+[ \t]+\S+[ \t]+`,
	`(?:zip|unzip|zipcloak)[^\n;&|]{0,300}?[ \t]-P[ \t]*`,
	`(?:sqlcmd|bcp|osql|isql)[^\n;&|]{0,300}?[ \t]-P[ \t]*`,
	`rabbitmqctl[^\n;&|]{0,100}?[ \t](?:add_user|change_password)[ \t]+\S+[ \t]+`,
	`net[ \t]+use[^\n;&|]{0,300}?[ \t]/user:\S+[ \t]+`,
	`openssl[ \t]+passwd(?:[ \t]+-(?:1|5|6|apr1|aixmd5|crypt|quiet|table|noverify))*[ \t]+`,
	`7z[ar]?[^\n;&|]{0,300}?[ \t]-p`,
	`(?:rar|unrar)[^\n;&|]{0,300}?[ \t]-h?p`,
	`ssh-keygen[^\n;&|]{0,300}?[ \t]-[NP][ \t]*`,
	`ldap[a-z]+[^\n;&|]{0,300}?[ \t]-w[ \t]*`,
	`openssl[^\n;&|]{0,300}?[ \t]-(?:passin|passout|password|passwd|pass)[ \t]+pass:`,
	`openssl[^\n;&|]{0,300}?[ \t]-k[ \t]+`,
	`ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?`,
	`(?i:requirepass|masterauth)[ \t]+`,
	`lftp[^\n;&|]{0,300}?[ \t]-u[ \t]+['"]?[^\s,'"]+,`,
}

// cliPasswordNeeds are, for each command name of cliPasswordForms but
// those that name the password themselves (requirepass,
// ConvertTo-SecureString), the options one of which its forms require.
var cliPasswordNeeds = map[string][]string{
	"mysql": {"-p"}, "mariadb": {"-p"}, "sshpass": {"-p"}, "redis-cli": {"-a"},
	"smbclient": {"-U", "--user="}, "rpcclient": {"-U", "--user="}, "smbmap": {"-U", "--user="},
	"htpasswd": {"-"}, "zip": {"-P"}, "unzip": {"-P"}, "zipcloak": {"-P"}, "7z": {"-p"},
	"rar": {"-p", "-hp"}, "unrar": {"-p", "-hp"}, "ssh-keygen": {"-N", "-P"}, "ldap": {"-w"},
	"openssl": {"passwd", "pass:", "-k"}, "lftp": {"-u"},
	"sqlcmd": {"-P"}, "bcp": {"-P"}, "osql": {"-P"}, "isql": {"-P"},
	"rabbitmqctl": {"add_user", "change_password"}, "net": {"/user:"},
}

// cliPasswordAnchors are the command names of cliPasswordForms.
var cliPasswordAnchors = []string{"mysql", "mariadb", "sshpass", "redis-cli", "smbclient", "rpcclient", "smbmap",
	"htpasswd", "zip", "unzip", "zipcloak", "7z", "rar", "unrar", "ssh-keygen", "ldap", "openssl", "ConvertTo-SecureString",
	"requirepass", "masterauth", "REQUIREPASS", "MASTERAUTH", "lftp", "sqlcmd", "bcp", "osql", "isql",
	"rabbitmqctl", "net"}

// pamControls are the control words of a PAM configuration line
// ("password required pam_unix.so"), which starts with "password" too.
var pamControls = map[string]bool{"required": true, "requisite": true, "sufficient": true, "optional": true, "include": true, "substack": true}

// configPassword vets the value of a "password VALUE" configuration line:
// 4+ characters, not a placeholder, an option (-l), a PAM control
// ("password required pam_unix.so", "password [success=1 …]"), nor a
// word of prose: it holds a digit or punctuation besides a sentence's
// trailing one ("password expired", "passwd Bob", "the username/password
// automatically?" are not).
func configPassword(c string, m []int) (int, int, bool) {
	s, e := m[2], m[3]
	if c[s] != '"' {
		// Sentence punctuation ends a word of prose ("the
		// username/password automatically?"), not a password.
		for e > s && strings.ContainsRune(".,;:!?)", rune(c[e-1])) {
			e--
		}
	}
	v := strings.Trim(c[s:e], `"`)
	if len(v) < 4 || isPlaceholder(v) || pamControls[strings.ToLower(v)] || v == "foobared" ||
		strings.ContainsRune("-[(", rune(v[0])) {
		return 0, 0, false
	}
	if strings.IndexFunc(v, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
		return 0, 0, false
	}
	return s, e, true
}

// redisAuthSecret returns the password of AUTH [USER] PASSWORD: the first
// word, or, when a second follows and the first is a user name (lower
// case letters, digits, '_', '-', '.'), both (the user is redacted with
// it: "AUTH PASSWORD more" cannot be told from "AUTH USER PASSWORD" by
// the words alone). Placeholders and redis.conf's example "foobared"
// are not passwords.
func redisAuthSecret(c string, m []int) (int, int, bool) {
	s, e := m[2], m[3]
	v := strings.Trim(c[s:e], `"'`)
	if m[4] >= 0 && strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0 {
		e = m[5]
		v = strings.Trim(c[m[4]:m[5]], `"'`)
	}
	return s, e, len(v) >= 4 && !isPlaceholder(v) && v != "foobared"
}

// redisAuthStart accepts AUTH that starts a word after a redis-cli prompt
// (host:port> or host:port[db]>, blanks after it) or on a line that runs
// redis-cli.
func redisAuthStart(text string, p int) int {
	if wordStart(text, p) < 0 || p == 0 || !isSpaceByte(text[p-1]) && text[p-1] != '>' {
		return -1
	}
	line := text[lineOrLimit(text, p, 512):p]
	if strings.Contains(line, "redis-cli") {
		return p
	}
	t := strings.TrimRight(line, " \t")
	if !strings.HasSuffix(t, ">") {
		return -1
	}
	t = t[:len(t)-1]
	if i := strings.LastIndexByte(t, '['); i >= 0 && strings.HasSuffix(t, "]") {
		t = t[:i]
	}
	i := strings.LastIndexByte(t, ':')
	if i < 0 || i == len(t)-1 {
		return -1
	}
	for _, r := range t[i+1:] {
		if r < '0' || r > '9' {
			return -1
		}
	}
	return p
}

// proseSecretStart accepts an anchor of contextfold-prose-secret that
// starts a word; "key" counts only after "api", "access" or "secret" and
// a blank, '_' or '-' ("the key is …" alone names no secret). It returns
// where the name starts, -1 otherwise.
func proseSecretStart(text string, p int) int {
	if strings.EqualFold(text[p:min(len(text), p+3)], "key") {
		q := -1
		for _, w := range []string{"api", "access", "secret"} {
			if b := p - len(w) - 1; b >= 0 && strings.EqualFold(text[b:p-1], w) && strings.ContainsRune(" _-", rune(text[p-1])) {
				q = b
				break
			}
		}
		if q < 0 {
			return -1
		}
		p = q
	}
	return wordStart(text, p)
}

// proseSecret vets the value of a secret told in a sentence, trailing
// punctuation left out: 8+ characters mixing letters and digits, not a
// placeholder, not a snake_case identifier ("the token is access_token_2"
// names a variable), not a word of prose ("the password is incorrect").
func proseSecret(c string, m []int) (int, int, bool) {
	s, e := m[6], m[7]
	for e > s && strings.ContainsRune(".,;:)]}>", rune(c[e-1])) {
		e--
	}
	// A sentence's '!' or '?' is left out of what is vetted, but
	// redacted with the value: it may be the password's last character.
	ve := e
	for ve > s && strings.ContainsRune(".,;:!?)]}>", rune(c[ve-1])) {
		ve--
	}
	v := c[s:ve]
	if isPlaceholder(v) || snakeIdentifier(v) || !hasLetterAndDigit(v) {
		return 0, 0, false
	}
	symbol := len(v) >= 6 && strings.ContainsAny(c[s:e], passwordSymbols)
	switch {
	case m[4] >= 0: // a short name: pass, pwd, pw
		// "pw = hash(p1)", "pass: TestScrub2" (a test report), "pass
		// tests/x1.py::t", "pwd v1.2": code, a name, a path or a
		// version, not a password. What is left must look like one: a
		// password symbol among letters and digits, or 12+ letters and
		// digits.
		return s, e, !bracketed(v) && !looksLikeCode(strings.TrimRight(v, "([{")) && (symbol || len(v) >= 12 && isAlnum(v))
	case m[2] >= 0: // a secret word, then an operator ("password: VALUE")
		// contextfold-keyed-secret and contextfold-env-secret read
		// NAME: VALUE and NAME=VALUE of 8+ characters; what is left
		// here is an arrow, and a password with a password symbol (a
		// token that short is a grammar's: "token = 1*tchar").
		// A word of another language (密码：…, Passwort: …) is no
		// NAME those rules read: the value is vetted as after a verb.
		op := strings.TrimSpace(c[m[2]:m[3]])
		if op == "->" || op == "=>" || foreignPasswordWord(c) {
			return s, e, len(v) >= 8 || symbol
		}
		return s, e, symbol && strings.EqualFold(c[:4], "pass")
	}
	return s, e, len(v) >= 8 || symbol
}

// bracketed reports whether v holds a pair of brackets: a call, an index
// or a literal of code ("hash(p1)", "env[k2]").
func bracketed(v string) bool {
	for _, p := range []string{"()", "[]", "{}"} {
		if i := strings.IndexByte(v, p[0]); i >= 0 && strings.IndexByte(v[i:], p[1]) > 0 {
			return true
		}
	}
	return false
}

// foreignPasswordWord reports whether c starts with one of
// foreignPasswordWords (in any case).
func foreignPasswordWord(c string) bool {
	lower := strings.ToLower(c[:min(len(c), 24)])
	for _, w := range strings.Split(foreignPasswordWords, "|") {
		if strings.HasPrefix(lower, w) {
			return true
		}
	}
	return false
}

// isAlnum reports whether s is ASCII letters and digits alone.
func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// proseSecretAnchors are contextfold-prose-secret's anchors: its names as
// a sentence writes them (not the upper-case PASS of a test report), and
// the word for a password in the languages a chat is often written in.
var proseSecretAnchors = []string{"password", "Password", "PASSWORD", "passphrase", "Passphrase", "token", "Token",
	"secret", "Secret", "key", "Key", "KEY", "passwd", "pass", "Pass", "pwd", "pw", "Pw", "PW",
	"Passwort", "passwort", "Kennwort", "kennwort", "contraseña", "Contraseña", "mot de passe", "Mot de passe",
	"senha", "Senha", "пароль", "Пароль", "wachtwoord", "Wachtwoord", "hasło", "Hasło", "şifre", "Şifre",
	"parola", "Parola", "lösenord", "Lösenord", "密码", "密碼", "口令", "パスワード", "비밀번호"}

// labelWords finds a secret's name among the last words of a label
// (lower case): contextfold-label-secret's. 1: the name.
var labelWords = regexp.MustCompile(`(?:^|[^a-z])((?:password|passwd|passphrase|passcode|pwd|token|secret|(?:api|access|secret|private)[ _-]?key)s?)(?:[^a-z]|$)`)

// urlPassword returns the password of a URL's userinfo
// (contextfold-url-password), up to the last '@' of the authority, or the
// first when a '?' or '#' follows it (a query's e-mail address); a
// placeholder is no password.
func urlPassword(c string, m []int) (int, int, bool) {
	s, e := m[2], m[3]
	if k := strings.IndexByte(c[s:e], '@'); k >= 0 && strings.ContainsAny(c[s+k:e], "?#") {
		e = s + k
	}
	return s, e, e-s >= 3 && !isPlaceholder(c[s:e])
}

// labelLineStart accepts the ':' that ends a line (blanks after it) when
// the line is a label naming a secret: at most 100 bytes, one of
// labelWords among its last four words ("Password:", "Enter new
// password:", "API key:", "Password for user postgres:"), and no code's
// '=', '(', '{' or ';' from that name on ("def password():" is code). It
// returns the line's start, -1 otherwise.
func labelLineStart(text string, p int) int {
	ls := lineStartWithin(text, p, 101)
	if ls < 0 || p-ls > 100 || p == ls {
		return -1
	}
	label := text[ls:p]
	i := len(label) // the start of the last four words
	for n := 0; n < 4 && i > 0; n++ {
		for i > 0 && (label[i-1] == ' ' || label[i-1] == '\t') {
			i--
		}
		for i > 0 && label[i-1] != ' ' && label[i-1] != '\t' {
			i--
		}
	}
	tail := strings.ToLower(label[i:])
	ms := labelWords.FindAllStringSubmatchIndex(tail, -1)
	if ms == nil || strings.ContainsAny(tail[ms[len(ms)-1][2]:], "=({;") {
		return -1
	}
	return ls
}

// labelSecret vets the lines after a label (contextfold-label-secret):
// after at most two blank or code-fence lines, a line holding one token
// alone (indented, wrapped in backticks or quotes allowed) that looks like
// a credential, not a word, a sentence or code: 8+ characters with a
// letter and a digit, and mixed case, a password symbol, or 16+ letters
// and digits; not a placeholder, a path, a URL, an option, a snake_case
// identifier or code ("Password:" then "  The password must …", "if …",
// "********", "None" stay).
func labelSecret(c string, m []int) (int, int, bool) {
	pos := m[1]
	for skipped := 0; ; skipped++ {
		le := strings.IndexByte(c[pos:], '\n')
		if le < 0 {
			le = len(c) - pos
		}
		line := strings.TrimSpace(c[pos : pos+le])
		if line != "" && !strings.HasPrefix(line, "```") {
			break
		}
		if skipped == 2 || pos+le >= len(c) {
			return 0, 0, false
		}
		pos += le + 1
	}
	le := strings.IndexByte(c[pos:], '\n')
	if le < 0 {
		le = len(c) - pos
	}
	line := c[pos : pos+le]
	s := pos + len(line) - len(strings.TrimLeft(line, " \t"))
	e := pos + len(strings.TrimRight(line, " \t\r"))
	if e-s >= 2 && strings.ContainsRune("`'\"", rune(c[s])) && c[e-1] == c[s] {
		s, e = s+1, e-1
	}
	return s, e, labelValue(c[s:e])
}

// labelValue reports whether v, a value shown under or beside a label
// with no operator (contextfold-label-secret), looks like a credential:
// one token of 8+ characters with a letter and a digit, and mixed case, a
// password symbol, or 16+ letters and digits; not a placeholder, a path,
// a URL, an option, a snake_case identifier or code.
func labelValue(v string) bool {
	if len(v) < 8 || strings.ContainsAny(v, " \t`'\"|") || isPlaceholder(v) || snakeIdentifier(v) ||
		looksLikeCode(v) || strings.Contains(v, "://") || v[0] == '-' || !hasLetterAndDigit(v) {
		return false
	}
	upper := strings.IndexFunc(v, unicode.IsUpper) >= 0
	lower := strings.IndexFunc(v, unicode.IsLower) >= 0
	return upper && lower || strings.ContainsAny(v, passwordSymbols) || len(v) >= 16 && isAlnum(v)
}

// labelCells are the cells that label a secret in a Markdown table row
// (lower case, emphasis and code marks removed): contextfold-label-secret.
var labelCells = map[string]bool{"password": true, "passwd": true, "passphrase": true, "passcode": true, "pwd": true,
	"secret": true, "token": true, "api key": true, "api_key": true, "apikey": true, "api-key": true,
	"access key": true, "secret key": true, "access token": true, "client secret": true}

// tableLabelStart accepts the '|' that opens a Markdown table cell holding
// one of labelCells alone ("| Password | VALUE |"); -1 otherwise.
func tableLabelStart(text string, p int) int {
	e := strings.IndexByte(text[p+1:min(len(text), p+40)], '|')
	if e < 0 {
		return -1
	}
	cell := strings.ToLower(strings.Trim(text[p+1:p+1+e], " \t*_`"))
	if !labelCells[cell] {
		return -1
	}
	return p
}

// tableSecret vets the cell after a label cell (contextfold-label-secret)
// as labelValue does.
func tableSecret(c string, m []int) (int, int, bool) {
	return m[2], m[3], labelValue(c[m[2]:m[3]])
}

// cjkSecretWords are the words for a password, a token and a secret key
// in Chinese (simplified and traditional), Japanese and Korean.
var cjkSecretWords = []string{"密码", "密碼", "口令", "令牌", "密钥", "密鑰", "秘钥", "パスワード", "暗証番号", "トークン", "シークレット",
	"APIキー", "비밀번호", "암호", "토큰", "API 키", "API키"}

// cjkSecretLinks are what joins such a word to its value: a copula, a
// topic or subject particle, "changed to", "set to", an operator.
const cjkSecretLinks = "是|为|為|改为|改成|改為|设为|设置为|設為|設定為|は|が|を|も|는|은|가|이|를|을|:|：|=|＝"

// cjkSecret vets the value of a secret told in Chinese, Japanese or
// Korean (contextfold-prose-secret): trailing punctuation left out, 8+
// characters mixing letters and digits, or 6+ with a password symbol, not
// a placeholder nor a snake_case identifier. "密码是8位" and "パスワードは
// 8文字以上" give a value too short, "密码是否正确" none.
func cjkSecret(c string, m []int) (int, int, bool) {
	s, e := m[2], m[3]
	for e > s && strings.ContainsRune(".,;:)]}>", rune(c[e-1])) {
		e--
	}
	// A sentence's '!' or '?' is not vetted, but redacted with the value:
	// it may be the password's last character.
	ve := e
	for ve > s && strings.ContainsRune("!?", rune(c[ve-1])) {
		ve--
	}
	v := c[s:ve]
	if isPlaceholder(v) || snakeIdentifier(v) || !hasLetterAndDigit(v) {
		return 0, 0, false
	}
	return s, e, len(v) >= 8 || len(v) >= 6 && strings.ContainsAny(c[s:e], passwordSymbols)
}

// foreignPasswordWords is the alternation of those words in other
// languages (case is folded by the expression).
const foreignPasswordWords = "passwort|kennwort|contraseña|mot de passe|senha|пароль|wachtwoord|hasło|şifre|parola|lösenord|密码|密碼|口令|パスワード|비밀번호"

// The parts of contextfold-prose-secret's expression between the name and
// the value: a qualifier naming what the secret is for ("for postgres",
// "of the admin account", a prompt's "for 'https://bob@github.com'" or
// "for key '/root/.ssh/id_rsa'"), a verb ("is", "was set to", "is now", a colon
// after it allowed) and an operator (':', '=', '->', '=>', ':=').
const (
	proseQualifier = `[ \t]+(?i:for|of|on|to)(?:[ \t]+(?:[\w.@/-]{1,64}|'[^'\s]{1,128}'|"[^"\s]{1,128}")){1,3}?`
	proseVerb      = `[ \t]+(?i:is still|is now|is set to|is|was changed to|was set to|was|will be|would be|has been|set to|changed to|es|est|ist|é|è|är|er|jest)[ \t]*:?[ \t]+`
	proseOperator  = `[ \t]*(?::=|=>|->|:|=)[ \t]*`
)

// passwordSymbols are the symbols a password policy asks for; a value
// holding one among letters and digits reads as a password, where '.',
// '-', '_', '/' and ':' make versions, names and paths.
const passwordSymbols = "!@#$%^&*+=?~"

// callSecretWords are the names (upper case, separators removed) that
// name a secret as a builder member with no set/with prefix:
// .password("…"), .apiKey("…").
var callSecretWords = map[string]bool{
	"PASSWORD": true, "PASSWD": true, "PASSPHRASE": true, "SECRET": true, "TOKEN": true,
	"APIKEY": true, "ACCESSTOKEN": true, "AUTHTOKEN": true, "CLIENTSECRET": true,
	"SECRETKEY": true, "ACCESSKEY": true, "PRIVATEKEY": true, "SECRETACCESSKEY": true,
}

// callSecretStart walks back from the '(' of a call whose first argument
// is a string literal to the start of the called name, and accepts it when
// the name is a setter of a secret (callSetterName), a builder member of
// callSecretWords, or auth/login (two arguments, callSecret checks); -1
// otherwise.
func callSecretStart(text string, p int) int {
	b := p
	for b > 0 && p-b < 128 && isWordByte(text[b-1]) {
		b--
	}
	if b == p {
		// Python's auth=('user', '…') (requests, httpx): a keyword
		// argument's tuple, read as auth(…).
		q := p
		for q > 0 && (text[q-1] == ' ' || text[q-1] == '\t') {
			q--
		}
		if q > 0 && text[q-1] == '=' {
			q--
			for q > 0 && (text[q-1] == ' ' || text[q-1] == '\t') {
				q--
			}
			if q >= 4 && text[q-4:q] == "auth" && (q == 4 || !isWordByte(text[q-5])) {
				return q - 4
			}
		}
		return -1
	}
	if text[b] >= '0' && text[b] <= '9' {
		return -1
	}
	name := text[b:p]
	if k := strings.LastIndexByte(name, '_'); k >= 0 && loginCalls[name[k+1:]] {
		return b + k + 1 // Markdown's _HTTPBasicAuth(…)_, a joined name
	}
	if _, ok := callSetterName(name); !ok && !loginCalls[name] && !secretNameArgument(text[p+1:]) {
		return -1
	}
	return b
}

// loginCalls are the calls whose two string arguments are a user and a
// password: db.auth("user", "…") (the MongoDB shell), server.login("user",
// "…") (smtplib, ftplib, imaplib), HTTPBasicAuth("user", "…") and
// HTTPDigestAuth (requests), BasicAuth (aiohttp), and Python's
// auth=("user", "…") keyword tuple (callSecretStart).
var loginCalls = map[string]bool{"auth": true, "login": true, "HTTPBasicAuth": true, "HTTPDigestAuth": true,
	"BasicAuth": true, "HTTPProxyAuth": true}

// secretNameArgument reports whether args, the text after a call's '(',
// starts with a string literal naming a secret and a second argument:
// os.Setenv("DB_PASSWORD", …), System.setProperty("db.password", …),
// define('DB_PASSWORD', …) (PHP), monkeypatch.setenv("API_KEY", …),
// viper.Set("auth.token", …). callSecret vets the value as NAME=VALUE.
func secretNameArgument(args string) bool {
	args = strings.TrimLeft(args[:min(len(args), 96)], " \t")
	q := `"`
	switch {
	case strings.HasPrefix(args, `\"`):
		q = `\"`
	case strings.HasPrefix(args, "'"):
		q = "'"
	case !strings.HasPrefix(args, `"`):
		return false
	}
	args = args[len(q):]
	k := strings.Index(args, q)
	if k <= 0 || k > 64 || !strings.HasPrefix(strings.TrimLeft(args[k+len(q):], " \t"), ",") {
		return false
	}
	for i := 0; i < k; i++ {
		if c := args[i]; !(isWordByte(c) || c == '.' || c == '-') {
			return false
		}
	}
	return acceptEnvSecret(args[:k], "Secret-Value-1")
}

// callSetterName returns the secret name a setter or builder member
// sets: the rest of setX/withX/set_x/with_x, or the name itself when it
// is one of callSecretWords; ok false when the name sets no secret.
func callSetterName(name string) (string, bool) {
	rest := name
	for _, pre := range []string{"set", "Set", "with", "With"} {
		if r, ok := strings.CutPrefix(name, pre); ok && r != "" && (r[0] == '_' || r[0] >= 'A' && r[0] <= 'Z') {
			rest = strings.TrimLeft(r, "_")
			break
		}
	}
	joined := strings.ToUpper(strings.ReplaceAll(rest, "_", ""))
	if rest == name {
		return rest, callSecretWords[joined]
	}
	return rest, maybeSecretName(joined) || isSecretWord(joined) || joinedQualifiedKey(joined)
}

// callSecret vets a call of contextfold-call-secret: a one-argument call
// of a secret's setter whose value passes as NAME=VALUE would, or the
// second argument of auth(user, password) or login(user, password).
func callSecret(c string, m []int) (int, int, bool) {
	s, e, ok := valueGroup(m, 3, 5)
	if !ok {
		return 0, 0, false
	}
	name, v := c[m[2]:m[3]], c[s:e]
	if c[m[3]] != '(' && (name != "auth" || m[4] < 0) {
		return 0, 0, false // auth=( takes a user and a password
	}
	if m[4] >= 0 { // two arguments
		if loginCalls[name] {
			return s, e, len(v) >= 4 && !isPlaceholder(v)
		}
		// A name and its value: os.Setenv("DB_PASSWORD", "…").
		arg := strings.Trim(c[m[4]:m[5]], " \t,\\\"'")
		return s, e, secretNameArgument(c[m[3]+1:]) && acceptEnvSecret(arg, v)
	}
	rest, ok := callSetterName(name)
	if !ok {
		return 0, 0, false
	}
	return s, e, acceptEnvSecret(strings.ToUpper(strings.ReplaceAll(rest, "_", "")), v)
}

// keystoreOptionStart accepts an option of contextfold-keystore-password
// (the anchor is the option's name, or "-new") that starts a word and
// follows "keytool" or "jarsigner" on its line, and returns where its
// '-' is; -1 otherwise.
func keystoreOptionStart(text string, p int) int {
	b := p
	if text[p] != '-' {
		for b > 0 && (text[b-1] >= 'a' && text[b-1] <= 'z') {
			b--
		}
		if b == 0 || text[b-1] != '-' {
			return -1
		}
		b--
	}
	if b == 0 || !isSpaceByte(text[b-1]) {
		return -1
	}
	line := text[lineOrLimit(text, b, 1024):b]
	if !strings.Contains(line, "keytool") && !strings.Contains(line, "jarsigner") {
		return -1
	}
	return b
}

// xmlAttrStart walks back from "value=" to the '<' of its element (in
// the 1 KiB before it, no '>' between).
func xmlAttrStart(text string, p int) int {
	if p == 0 || !isSpaceByte(text[p-1]) {
		return -1
	}
	a := max(0, p-1000)
	k := strings.LastIndexAny(text[a:p], "<>")
	if k < 0 || text[a+k] != '<' {
		return -1
	}
	return a + k
}

// pgpassStart accepts the first ':' of a .pgpass host field (a name, an
// address or '*'), which starts the text or follows a blank, a quote,
// punctuation ("|db:5432:…" in a Markdown cell, "(db:5432:…") or a JSON
// escape; not a '\' nor a '/', unless the host is a Unix-domain socket
// directory (/var/run/postgresql:5432:…, /tmp:…: a path whose last segment
// has no '.'), which the match then starts with (dir/file.go:12:5:… is a
// position in a file, not a host).
func pgpassStart(text string, p int) int {
	b := p
	for b > 0 && p-b < 256 {
		c := text[b-1]
		if isWordByte(c) || strings.IndexByte(".-*%[]", c) >= 0 {
			b--
			continue
		}
		break
	}
	if b == p {
		return -1
	}
	if text[p-1] == '*' {
		return p - 1 // a wildcard host is '*' alone: "[*:…", "_*:…" start at '*'
	}
	if e := skipEscapeLetters(text, b, p); e != b {
		return e // "\ndb:5432:…", "\u0026db:5432:…"
	}
	if b > 0 && text[b-1] == '/' && !strings.Contains(text[b:p], ".") {
		// A Unix-domain socket directory as the host
		// (/var/run/postgresql:5432:…, /tmp:5432:…): the whole path.
		// A path whose last segment has a '.' is a file (src/main.go:12:5:…
		// is a position in a file, not a host).
		a := b - 1
		for a > 0 && p-a < 256 && (isWordByte(text[a-1]) || strings.IndexByte(".-/", text[a-1]) >= 0) {
			a--
		}
		return a
	}
	if b > 0 && (text[b-1] == '/' || text[b-1] == '\\') {
		return -1 // dir/file.go:12:5:…, a position in a file
	}
	return b
}

// pgpassSecret vets a .pgpass line: the host is '*' or names a host (a
// letter or a '.': "10:22:33:44:55" is a time, not a host), and the
// password is not a placeholder.
func pgpassSecret(c string, m []int) (int, int, bool) {
	host := c[m[2]:m[3]]
	if host != "*" && !strings.ContainsAny(host, ".abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		return 0, 0, false
	}
	s, e := m[4], m[5]
	if strings.Contains(host, "/") && strings.Trim(c[s:e], "0123456789") == "" {
		return 0, 0, false // grep -n of /etc/shadow: "/etc/shadow:1:root:$6$…:19000"
	}
	return s, e, e-s >= 4 && !isPlaceholder(c[s:e])
}

// loginOption finds, in a command line, what makes its -p a password: a
// user option (-u, -U, -l, --user, --username, --login) or a "login"
// subcommand.
var loginOption = regexp.MustCompile(`(?:^|[ \t])(?:-[uUl]|--user(?:name)?|--login)(?:[ \t=]|'|"|[A-Za-z0-9])|(?:^|[ \t])login(?:[ \t]|$)`)

// loginPasswordStart accepts "-p" that starts a word, on a command line
// (the text between the shell separators or line ends, plain or
// JSON-escaped, around it) that logs in (loginOption) and is not a MySQL
// client's (where "-p NAME" prompts and NAME is a database;
// contextfold-cli-password has -pPW).
func loginPasswordStart(text string, p int) int {
	if p > 0 && text[p-1] != ' ' && text[p-1] != '\t' {
		return -1
	}
	a := p
	// An escaped line end ends in 'n' or 'r' and starts with '\\': the
	// byte at hand rules most positions out before escapedLineEnd reads.
	for a > 0 && p-a < 512 && !commandLineEnd(text[a-1]) && !((text[a-1] == 'n' || text[a-1] == 'r') && escapedLineEnd(text, a)) {
		a--
	}
	b := p + 2
	for b < len(text) && b-p < 512 && !commandLineEnd(text[b]) && !((text[b] == '\\' || b+2 > len(text)) && escapedLineEnd(text, min(b+2, len(text)))) {
		b++
	}
	line := text[a:b]
	// Every match of loginOption holds "-u", "-U", "-l" or "login": a
	// line without them (a text of "-p " repeated) is passed over without
	// running the expression over its up to 1 KiB.
	if !strings.Contains(line, "-u") && !strings.Contains(line, "-U") && !strings.Contains(line, "-l") &&
		!strings.Contains(line, "login") || !loginOption.MatchString(line) {
		return -1
	}
	if head := text[a:p]; !strings.Contains(head, "mysql") && !strings.Contains(head, "mariadb") {
		return p // no word below can name a MySQL client
	}
	for _, w := range strings.Fields(text[a:p]) {
		// The program's name: after a directory, a quote or an opening
		// "$(" or backquote (`{"cmd":"mysql …`, "$(mysql …").
		w = w[strings.LastIndexAny(w, "/\"'\\`(")+1:]
		if strings.HasPrefix(w, "mysql") || strings.HasPrefix(w, "mariadb") {
			return -1
		}
	}
	return p
}

// commandLineEnd reports whether c ends a command line for
// loginPasswordStart: a line feed or a shell separator.
func commandLineEnd(c byte) bool { return c == '\n' || c == ';' || c == '&' || c == '|' }

// escapedLineEnd reports whether a JSON or C escaped line end (\n, \r)
// ends at p: inside JSON text it ends a command line as a newline does.
func escapedLineEnd(text string, p int) bool {
	return escapeBefore(text, p) == 2 && (text[p-1] == 'n' || text[p-1] == 'r')
}

// loginPassword vets the value of a login's -p: not a placeholder, not an
// option, not a port or a port mapping ("-p 8080:80", "-p 22"), and an
// attached bare value ("-pfoo", an option cluster like "-pr") only when
// it holds a digit and a letter.
func loginPassword(c string, m []int) (int, int, bool) {
	for g := 1; g <= 3; g++ {
		if m[2*g] < 0 {
			continue
		}
		s, e := m[2*g], m[2*g+1]
		v := c[s:e]
		if isPlaceholder(v) || strings.HasPrefix(v, "-") || strings.Trim(v, "0123456789:.") == "" {
			return 0, 0, false
		}
		if g == 3 && s == 2 && !hasLetterAndDigit(v) {
			return 0, 0, false
		}
		return s, e, true
	}
	return 0, 0, false
}

// cookieStart walks back from "ookie" to its first letter and an optional
// "Set-" before it; the name must start a word.
func cookieStart(text string, p int) int { return headerNameStart(text, p, 'c', "set-") }

// headerNameStart walks back from p, just past a header name's first
// letter (first, lower case: either case matches), over an optional
// prefix before it (ASCII case ignored); the name must start a word. -1
// when it does not.
func headerNameStart(text string, p int, first byte, prefix string) int {
	if p == 0 || text[p-1]|0x20 != first {
		return -1
	}
	b := p - 1
	if n := len(prefix); b >= n && strings.EqualFold(text[b-n:b], prefix) {
		b -= n
	}
	return wordStart(text, b)
}

// cookieSecret returns the span of a Cookie header's pairs, or of a
// Set-Cookie header's value: what holds '=' and is not a placeholder.
func cookieSecret(c string, m []int) (int, int, bool) {
	if m[4] < 0 {
		return 0, 0, false
	}
	v := strings.TrimRight(c[m[4]:m[5]], " \t")
	s, e := m[4], m[4]+len(v)
	eq := strings.IndexByte(v, '=')
	if eq <= 0 {
		return 0, 0, false // prose: "Cookie: a small file"
	}
	if m[3] > m[2] { // Set-Cookie: the value of its one cookie
		val := v[eq+1:]
		if k := strings.IndexByte(val, ';'); k >= 0 {
			val = val[:k]
		}
		val = strings.TrimSpace(val)
		if len(val) < 8 || isPlaceholder(val) {
			return 0, 0, false
		}
		return s + eq + 1, s + eq + 1 + len(val), true
	}
	if len(v) < 8 || isPlaceholder(v[eq+1:]) {
		return 0, 0, false
	}
	return s, e, true
}

// htmlInputStart accepts a password type attribute inside an <input>
// tag and returns where the tag starts; -1 otherwise.
func htmlInputStart(text string, p int) int {
	b := strings.LastIndexByte(text[max(0, p-512):p], '<')
	if b < 0 {
		return -1
	}
	b += max(0, p-512)
	if strings.IndexByte(text[b:p], '>') >= 0 || !strings.EqualFold(text[b:min(len(text), b+6)], "<input") {
		return -1
	}
	return b
}

// dockerEnvStart accepts ENV that starts a line (a Dockerfile's
// instruction, indented or not); -1 otherwise.
func dockerEnvStart(text string, p int) int {
	b := p
	for b > 0 && (text[b-1] == ' ' || text[b-1] == '\t') {
		b--
	}
	if b > 0 && text[b-1] != '\n' {
		return -1
	}
	return p
}

// cookieObjectStart accepts the "value" member of a JSON object (no
// object nested in it, 1 KiB either side at most) that has a "name" and
// a "domain" member too: a cookie. -1 otherwise.
func cookieObjectStart(text string, p int) int {
	a := strings.LastIndexAny(text[max(0, p-1024):p], "{}")
	if a < 0 || text[max(0, p-1024)+a] != '{' {
		return -1
	}
	a += max(0, p-1024)
	b := strings.IndexAny(text[p:min(len(text), p+1024)], "{}")
	if b < 0 || text[p+b] != '}' {
		return -1
	}
	obj := text[a : p+b]
	if !strings.Contains(obj, `"name"`) || !strings.Contains(obj, `"domain"`) {
		return -1
	}
	return p
}

// curlCookieStart accepts -b or --cookie as an option (after a blank) of
// a curl command on the same line; -1 otherwise.
func curlCookieStart(text string, p int) int {
	if p == 0 || text[p-1] != ' ' && text[p-1] != '\t' {
		return -1
	}
	if !strings.Contains(text[lineOrLimit(text, p, 512):p], "curl") {
		return -1
	}
	return p
}

// curlCookie vets curl's -b/--cookie argument: NAME=VALUE pairs (a '='
// after a name, a value of 8+ characters in all, not a placeholder), not
// a cookie jar's file name.
func curlCookie(c string, m []int) (int, int, bool) {
	s, e, ok := valueGroup(m, 1, 3)
	if !ok {
		return 0, 0, false
	}
	v := c[s:e]
	eq := strings.IndexByte(v, '=')
	return s, e, eq > 0 && len(v)-eq-1 >= 8 && !isPlaceholder(v[eq+1:])
}

// netrcStart accepts "password" in a .netrc entry: the words before it
// are "machine HOST" or "default", then optionally "login USER" and
// "account ACCOUNT", in any order.
func netrcStart(text string, p int) int {
	if wordStart(text, p) < 0 || p == 0 || !isSpaceByte(text[p-1]) {
		return -1
	}
	head := text[max(0, p-512):p]
	if !strings.Contains(head, "machine") && !strings.Contains(head, "default") {
		return -1 // no word below can end in either
	}
	w := strings.Fields(head)
	for len(w) >= 2 && (w[len(w)-2] == "login" || w[len(w)-2] == "account") {
		w = w[:len(w)-2]
	}
	switch {
	case len(w) >= 2 && endsWithWord(w[len(w)-2], "machine"):
	case len(w) >= 1 && endsWithWord(w[len(w)-1], "default"):
	default:
		return -1
	}
	return p
}

// endsWithWord reports whether field (a run of non-blanks) ends in the
// word kw that starts at a word boundary: field is kw, or kw after
// punctuation, '_' or a JSON escape ("|machine", "\"machine",
// "\u0026machine"), not after a letter or a digit ("mymachine").
func endsWithWord(field, kw string) bool {
	return strings.HasSuffix(field, kw) && wordStart(field, len(field)-len(kw)) >= 0
}

// authHeaderStart walks back from "uthorization" to its first letter and an
// optional "Proxy-" before it; the name must start a word.
func authHeaderStart(text string, p int) int { return headerNameStart(text, p, 'a', "proxy-") }

// authCredential vets the credential of an Authorization header: not a
// placeholder, and not a plain word (a scheme alone, "required",
// "authentication"): it has a digit, a capital after its first letter, or
// token68 punctuation.
func authCredential(c string, m []int) (int, int, bool) {
	s, e := m[4], m[5]
	v := c[s:e]
	if isPlaceholder(v) {
		return 0, 0, false
	}
	// A credential under minAuthCredential characters is one only after a
	// scheme ("Bearer abc123": a development server's token), with a
	// digit, and not a placeholder password: "Bearer TOKEN", "Bearer
	// secret", "Authorization: none" are not.
	if len(strings.TrimRight(v, "=")) < minAuthCredential &&
		(m[2] < 0 || !strings.ContainsAny(v, "0123456789") || placeholderPasswordSet[strings.ToLower(v)]) {
		return 0, 0, false
	}
	// Basic credentials of a placeholder ("user:pass") are not a secret.
	if raw, err := base64.StdEncoding.DecodeString(v); err == nil {
		if _, pw, ok := strings.Cut(string(raw), ":"); ok && placeholderPasswordSet[strings.ToLower(pw)] {
			return 0, 0, false
		}
	}
	plain := true
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if ch >= '0' && ch <= '9' || i > 0 && ch >= 'A' && ch <= 'Z' || strings.IndexByte("._~+/-=", ch) >= 0 {
			plain = false
			break
		}
	}
	return s, e, !plain
}

// minAuthCredential is the length from which an Authorization header's
// credential needs no scheme nor digit to be one (bytes). Below it, down to
// 4, a credential after a scheme counts when it has a digit: a real
// bearer token is rarely that short, but a development server's ("Bearer
// dev42", "Bearer s3cr3t", "Bearer 1234") is one all the same, and a word
// ("Bearer token", "Bearer TOKEN") has no digit.
const minAuthCredential = 8

// envSecret vets a NAME=value candidate and returns the value's span.
var envSecret = keyedSecret(5)

// keyedSecret vets a candidate whose group 1 is a name and whose value is
// the first of groups 2..last that matched (its quoted and bare forms), as
// NAME=value is (acceptEnvSecret).
func keyedSecret(last int) func(c string, m []int) (int, int, bool) {
	return func(c string, m []int) (int, int, bool) {
		s, e, ok := valueGroup(m, 2, last)
		return s, e, ok && acceptEnvSecret(c[m[2]:m[3]], c[s:e])
	}
}

// valueGroup returns the span of the first of submatch groups first..last
// that matched in m (a regexp submatch index); ok false when none did.
func valueGroup(m []int, first, last int) (s, e int, ok bool) {
	for g := first; g <= last && 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 {
			return m[2*g], m[2*g+1], true
		}
	}
	return 0, 0, false
}

// secretLast lists name components that make NAME=value a secret when the
// name ends with them.
var secretLast = map[string]bool{
	"PASSWORD": true, "PASSWD": true, "PASS": true, "PWD": true, "SECRET": true,
	"TOKEN": true, "CREDENTIALS": true, "CREDENTIAL": true, "PASSPHRASE": true,
	"APIKEY": true, "PASSWORDS": true, "SECRETS": true, "PASSCODE": true,
	// A servlet container's and PHP's session cookies, in a URL
	// (;jsessionid=…) or a log.
	"JSESSIONID": true, "PHPSESSID": true,
	// sshpass -e reads SSHPASS; a Wi-Fi pre-shared key (wpa_supplicant's
	// psk="…", hostapd's wpa_psk=…); SSSD's ldap_default_authtok.
	"SSHPASS": true, "PSK": true, "AUTHTOK": true,
	// REDISCLI_AUTH, BASIC_AUTH (user:password), PROXY_AUTH; only as an
	// upper-case name with a prefix (acceptEnvSecret).
	"AUTH": true,
}

// keyQualifiers make NAME=value a secret when NAME ends in <qualifier>_KEY.
var keyQualifiers = map[string]bool{
	"API": true, "ACCESS": true, "PRIVATE": true, "SECRET": true, "SIGNING": true,
	"ENCRYPTION": true, "MASTER": true, "AUTH": true, "CLIENT": true,
}

// splitName returns a name's components, upper case, split at '_', '-'
// and '.', its number left out (unnumbered).
func splitName(name string) []string {
	return strings.FieldsFunc(strings.ToUpper(unnumbered(name)), func(r rune) bool {
		return r == '_' || r == '-' || r == '.'
	})
}

// unnumbered returns name without the components of digits alone that end
// it (DB_PASSWORD_2, API_TOKEN_358, KEY_1 are a second password, a
// numbered token, a numbered key: the name's kind is the component before
// the number), as long as something stays before them.
func unnumbered(name string) string {
	for {
		j := len(name)
		for j > 0 && name[j-1] >= '0' && name[j-1] <= '9' {
			j--
		}
		if j == len(name) || j < 2 || name[j-1] != '_' && name[j-1] != '-' && name[j-1] != '.' {
			return name
		}
		name = name[:j-1]
	}
}

// secretName reports whether acceptEnvSecret accepts some value under
// name: what it asks of the name alone. envNameStart and keyNameStart
// ask it before their expression reads the value (up to 4 KiB of it: a
// text of "auth=(" repeated, whose name an upper-case one alone makes a
// secret, took a minute a MiB).
func secretName(name string) bool {
	parts := splitName(name)
	if len(parts) == 0 {
		return false
	}
	switch last := parts[len(parts)-1]; {
	case last == "ID":
		return len(parts) >= 3 && parts[len(parts)-2] == "KEY" && parts[len(parts)-3] == "ACCESS"
	case last == "AUTH":
		return len(parts) >= 2 && name == strings.ToUpper(name)
	default:
		return isSecretWord(last) || joinedQualifiedKey(last) || last == "KEY"
	}
}

// acceptEnvSecret decides whether NAME=value is a secret.
func acceptEnvSecret(name, value string) bool {
	parts := splitName(name)
	if len(parts) == 0 {
		return false
	}
	if isPlaceholder(value) || len(value) < 8 {
		return false
	}
	last := parts[len(parts)-1]
	if last == "ID" && len(parts) >= 3 && parts[len(parts)-2] == "KEY" && parts[len(parts)-3] == "ACCESS" {
		return true // AWS_ACCESS_KEY_ID and the like
	}
	if last == "AUTH" {
		// REDISCLI_AUTH, BASIC_AUTH: an environment variable's name (upper
		// case, a prefix); "auth = parsed.auth" is code.
		return len(parts) >= 2 && name == strings.ToUpper(name)
	}
	if isSecretWord(last) || joinedQualifiedKey(last) {
		// Shell's PWD/OLDPWD hold paths, excluded by isPlaceholder.
		return true
	}
	if last == "KEY" {
		if len(parts) >= 2 && keyQualifiers[parts[len(parts)-2]] {
			return true
		}
		return len(value) >= 16 && hasLetterAndDigit(value)
	}
	return false
}

func hasLetterAndDigit(s string) bool {
	var l, d bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			d = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			l = true
		}
	}
	return l && d
}

// isPlaceholder reports values that are not secrets: variable references,
// template placeholders, paths, repeated characters, and keywords.
func isPlaceholder(v string) bool {
	if v == "" {
		return true
	}
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "nil", "undefined", "required", "optional":
		return true
	}
	switch v[0] {
	case '$', '%', '<', '{', '/', '~':
		return true
	}
	// Markdown emphasis around a word ("*required*", "_none_"): a
	// document's note, not a value.
	if len(v) >= 3 && (v[0] == '*' || v[0] == '_') && v[len(v)-1] == v[0] {
		inner := strings.Trim(v, "*_")
		if inner != "" && strings.IndexFunc(inner, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) < 0 {
			return true
		}
	}
	if strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") {
		return true
	}
	if len(v) >= 3 && v[1] == ':' && v[2] == '\\' { // C:\path
		return true
	}
	same := true
	for i := 1; i < len(v); i++ {
		if v[i] != v[0] {
			same = false
			break
		}
	}
	return same
}

// netrcPassword returns the value of a .netrc "password VALUE" unless it
// is a placeholder; a one-character value is a password when it is a
// letter or a digit ("password x": the entry's machine and login are
// there, netrcStart), which isPlaceholder reads as a run of one
// character.
func netrcPassword(c string, m []int) (int, int, bool) {
	v := c[m[2]:m[3]]
	if len(v) == 1 {
		return m[2], m[3], v[0] >= 'a' && v[0] <= 'z' || v[0] >= 'A' && v[0] <= 'Z' || v[0] >= '0' && v[0] <= '9'
	}
	return m[2], m[3], !isPlaceholder(v)
}

// curlUserSecret returns the password of curl's -u USER:PASSWORD (the
// whole value when it has no password: "-u TOKEN:" or "-u TOKEN"), unless
// it is a placeholder. A value without ':' is a user alone (curl then
// prompts for the password) unless it is a token: 16+ characters mixing
// letters and digits.
func curlUserSecret(c string, m []int) (int, int, bool) {
	s, e, ok := valueGroup(m, 1, 3)
	if !ok {
		return 0, 0, false
	}
	v := c[s:e]
	k := strings.IndexByte(v, ':')
	switch {
	case k < 0:
		return s, e, len(v) >= 16 && hasLetterAndDigit(v) && !isPlaceholder(v)
	case k == len(v)-1:
		return s, e - 1, !isPlaceholder(v[:k])
	}
	return s + k + 1, e, !isPlaceholder(v[k+1:])
}

// userinfoStart walks back from '@' over a password and ':' to the user
// before it, and returns where the user starts (-1 when there is no ':',
// or when "//" precedes the user: a URL's).
func userinfoStart(text string, p int) int {
	j := p
	for j > 0 && p-j < 256 && !isSpaceByte(text[j-1]) && strings.IndexByte(":/@'\"\\<>()[]{}", text[j-1]) < 0 {
		j--
	}
	if j == 0 || text[j-1] != ':' || p-j < 3 {
		return -1
	}
	b := j - 1
	for b > 0 && j-1-b < 128 && (isWordByte(text[b-1]) || strings.IndexByte(".%+-", text[b-1]) >= 0) {
		b--
	}
	if b == j-1 || b >= 2 && text[b-2:b] == "//" {
		return -1 // a URL's user-info is contextfold-url-password's
	}
	return skipEscapeLetters(text, b, j-1)
}

// mailLabels are labels written before an e-mail address
// ("mailto:bob@example.com", "Cc:bob@…"): not a user name.
var mailLabels = map[string]bool{
	"mailto": true, "email": true, "e-mail": true, "mail": true, "to": true, "cc": true, "bcc": true,
	"from": true, "sender": true, "reply-to": true, "author": true, "contact": true, "xmpp": true, "sip": true,
}

// userinfoSecret vets USER:PASSWORD@HOST: the host has a letter and a '.'
// or a port (db.internal, github.com, db:5432) or is an IPv4 address; the
// user is not all digits (a time, 12:30@home) nor an e-mail label; the
// password is not a placeholder; and HOST is not a digest algorithm
// (image:tag@sha256:…).
func userinfoSecret(c string, m []int) (int, int, bool) {
	user := c[:m[2]-1]
	pw, host := c[m[2]:m[3]], c[m[4]:m[5]]
	if isPlaceholder(pw) || mailLabels[strings.ToLower(user)] || strings.Trim(user, "0123456789") == "" {
		return 0, 0, false
	}
	h := strings.ToLower(host)
	if strings.HasPrefix(h, "sha") || strings.HasPrefix(h, "blake") || strings.HasPrefix(h, "md5") {
		return 0, 0, false
	}
	letter := strings.IndexFunc(host, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0
	switch {
	case letter && (strings.IndexByte(host, '.') >= 0 || m[6] >= 0):
	case !letter && strings.Count(host, ".") == 3:
	default:
		return 0, 0, false
	}
	return m[2], m[3], true
}

// dockerAuthSecret accepts a config.json "auth" value that decodes to
// USER:PASSWORD with a password.
func dockerAuthSecret(c string, m []int) (int, int, bool) {
	v := c[m[2]:m[3]]
	d, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		d, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	}
	if err != nil {
		return 0, 0, false
	}
	k := strings.IndexByte(string(d), ':')
	if k < 0 || k == len(d)-1 {
		return 0, 0, false
	}
	for _, b := range d {
		if b < 0x20 || b >= 0x7f {
			return 0, 0, false
		}
	}
	return m[2], m[3], true
}

// lineOrLimit returns the start of the line holding p, or p-limit when
// the line starts further back: the start of the at most limit bytes of
// p's line before it. A begin function that reads the line before its
// anchor looks back this bounded way (a text without line breaks would
// make every anchor scan it to its start).
func lineOrLimit(text string, p, limit int) int {
	lo := max(0, p-limit)
	return lo + strings.LastIndexByte(text[lo:p], '\n') + 1
}

// containsAny reports whether s holds one of subs.
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// base64URLRunEnd returns where the run of base64url characters
// (letters, digits, '-', '_') that starts at i ends.
func base64URLRunEnd(text string, i int) int {
	for i < len(text) && (isWordByte(text[i]) || text[i] == '-') {
		i++
	}
	return i
}
