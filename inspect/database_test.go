package inspect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contextfold/contextfold"
	"github.com/contextfold/contextfold/internal/pgtest"
	"github.com/contextfold/contextfold/pgstore"
)

// testPassword is put in the store URL: no page may show it.
const testPassword = "pgsnap-s3cret-Zq7"

// sessionRows returns, per table, the SHA-256 of a PostgreSQL session's
// rows (every table with a session_id column, found in the catalogue, so
// that a table added later is covered too; the session's cf_sessions and
// cf_proxy_sessions rows), each row with its xmin: a row rewritten with the
// same values changes it too.
func sessionRows(t *testing.T, c *pgx.Conn, id int64, name string) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := c.Query(ctx, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = 'public' AND column_name = 'session_id' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 6 {
		t.Fatalf("tables with a session_id: %v %v", tables, err)
	}
	out := map[string]string{}
	dump := func(key, sql string, arg any) {
		var text string
		if err := c.QueryRow(ctx, sql, arg).Scan(&text); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		sum := sha256.Sum256([]byte(text))
		out[key] = hex.EncodeToString(sum[:]) + " (" + strconv.Itoa(len(text)) + " bytes)"
	}
	for _, tb := range tables {
		dump(tb, `SELECT coalesce(string_agg(t::text || ' xmin ' || t.xmin::text, E'\n' ORDER BY t::text), '') FROM `+pgx.Identifier{tb}.Sanitize()+` t WHERE t.session_id = $1`, id)
	}
	dump("cf_sessions", `SELECT coalesce(string_agg(t::text || ' xmin ' || t.xmin::text, E'\n'), '') FROM cf_sessions t WHERE t.id = $1`, id)
	dump("cf_proxy_sessions", `SELECT coalesce(string_agg(t::text || ' xmin ' || t.xmin::text, E'\n'), '') FROM cf_proxy_sessions t WHERE t.session = $1`, name)
	return out
}

// TestDatabaseStoreBrowsingChangesNoRow: `contextfold ui --store
// postgres://…?session=NAME` serves a session read-only (inspect.New over
// backend.ReadOnly). Browsing every page, the simulator, recall and "verify
// now", on a clean session and on one with a tampered node row, changes no
// row of the session, answers no page with a server error, and shows the
// URL without its password.
func TestDatabaseStoreBrowsingChangesNoRow(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		t.Run("damaged="+strconv.FormatBool(damaged), func(t *testing.T) {
			base := pgtest.URL(t)
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(u.User.Username(), testPassword)
			name := "inspect-" + strconv.FormatBool(damaged)
			q := u.Query()
			q.Set("session", name)
			u.RawQuery = q.Encode()
			s, err := pgstore.OpenURL(u.String(), contextfold.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.ImportDir(demoCopy(t)); err != nil {
				t.Fatal(err)
			}
			c, err := pgx.Connect(context.Background(), base)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			var id int64
			if err := c.QueryRow(context.Background(), `SELECT id FROM cf_sessions WHERE name = $1`, name).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if damaged {
				tag, err := c.Exec(context.Background(), `UPDATE cf_nodes SET data = convert_to(replace(convert_from(data, 'UTF8'), 'Port 5433 restored', 'Port 6666 restored'), 'UTF8') WHERE session_id = $1 AND step_id = 137`, id)
				if err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("tamper: %v %v", tag, err)
				}
			}
			before := sessionRows(t, c, id, name)

			in, err := New(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(in)
			defer srv.Close()
			pages := 0
			browseEverything(t, srv, srv.URL, func(method, path string) int {
				resp, body := do(t, srv, method, path, nil)
				if strings.Contains(body, testPassword) {
					t.Errorf("%s %s shows the password", method, path)
				}
				if method == http.MethodGet && resp.StatusCode == http.StatusOK {
					pages++
				}
				return resp.StatusCode
			})
			if pages < 40 {
				t.Fatalf("only %d pages answered 200: the browse proves little", pages)
			}
			// The pages show the session's content and its state.
			_, body := do(t, srv, http.MethodGet, "/", nil)
			if !strings.Contains(body, "session="+name) || strings.Contains(body, "no-store") {
				t.Errorf("timeline does not show the session:\n%.2000s", body)
			}
			_, body = do(t, srv, http.MethodGet, "/validate?fresh=1", nil)
			if damaged != strings.Contains(body, "validate-bad") || (damaged && !strings.Contains(body, "--store postgres://")) {
				t.Errorf("validate page (damaged %v):\n%.3000s", damaged, body)
			}
			_, body = do(t, srv, http.MethodGet, "/step/137", nil)
			if damaged != strings.Contains(body, "UNVERIFIED") || !strings.Contains(body, "bytes on disk") {
				t.Errorf("step 137 (damaged %v):\n%.3000s", damaged, body)
			}
			if after := sessionRows(t, c, id, name); !maps.Equal(before, after) {
				t.Fatalf("browsing changed the session's rows:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
