package pgbackend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/contextfold/contextfold/backend"
)

// SnapshotChunk is the size of one cf_snapshot_chunks row (bytes): large
// enough that a 285 MB snapshot is a few hundred rows, small enough that
// no row comes near PostgreSQL's 1 GB field limit or holds much memory
// twice while it is read.
const SnapshotChunk = 1 << 20

var _ backend.SnapshotStore = (*session)(nil)

// SnapshotInfo implements backend.SnapshotStore: one small row.
func (s *session) SnapshotInfo(kind string) (backend.SnapshotInfo, error) {
	ctx, cancel := opCtx()
	defer cancel()
	var info backend.SnapshotInfo
	id, err := s.id(ctx)
	if err != nil {
		return info, s.fail("read the shared snapshot", err)
	}
	if id == 0 {
		return info, notExist("shared snapshot " + kind)
	}
	var chunks int
	err = s.db.pool.QueryRow(ctx, `SELECT generation, rev, size, sha256, chunks FROM cf_snapshots WHERE session_id = $1 AND kind = $2`, id, kind).
		Scan(&info.Rev.Generation, &info.Rev.Seq, &info.Size, &info.SHA256, &chunks)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, notExist("shared snapshot " + kind)
	}
	if err != nil {
		return info, s.fail("read the shared snapshot", err)
	}
	return info, nil
}

// ReadSnapshot implements backend.SnapshotStore: the row and its chunks in
// one REPEATABLE READ transaction (a writer replacing the snapshot
// meanwhile is not seen half-way).
func (s *session) ReadSnapshot(kind string) (backend.SnapshotInfo, []byte, error) {
	ctx, cancel := opCtx()
	defer cancel()
	var info backend.SnapshotInfo
	id, err := s.id(ctx)
	if err != nil {
		return info, nil, s.fail("read the shared snapshot", err)
	}
	if id == 0 {
		return info, nil, notExist("shared snapshot " + kind)
	}
	tx, err := s.db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return info, nil, s.fail("read the shared snapshot", err)
	}
	defer tx.Rollback(ctx)
	var chunks int
	err = tx.QueryRow(ctx, `SELECT generation, rev, size, sha256, chunks FROM cf_snapshots WHERE session_id = $1 AND kind = $2`, id, kind).
		Scan(&info.Rev.Generation, &info.Rev.Seq, &info.Size, &info.SHA256, &chunks)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, nil, notExist("shared snapshot " + kind)
	}
	if err != nil {
		return info, nil, s.fail("read the shared snapshot", err)
	}
	if info.Size < 0 || info.Size > 1<<40 {
		return info, nil, s.fail("read the shared snapshot", fmt.Errorf("recorded size %d is not plausible", info.Size))
	}
	data := make([]byte, 0, info.Size)
	rows, err := tx.Query(ctx, `SELECT seq, data FROM cf_snapshot_chunks WHERE session_id = $1 AND kind = $2 ORDER BY seq`, id, kind)
	if err != nil {
		return info, nil, s.fail("read the shared snapshot", err)
	}
	next := 0
	for rows.Next() {
		var seq int
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			rows.Close()
			return info, nil, s.fail("read the shared snapshot", err)
		}
		if seq != next {
			rows.Close()
			return info, nil, s.fail("read the shared snapshot", fmt.Errorf("chunk %d missing", next))
		}
		next++
		data = append(data, b...)
	}
	if err := rows.Err(); err != nil {
		return info, nil, s.fail("read the shared snapshot", err)
	}
	if next != chunks || int64(len(data)) != info.Size {
		return info, nil, s.fail("read the shared snapshot", fmt.Errorf("%d chunks of %d bytes stored, %d chunks of %d bytes recorded", next, len(data), chunks, info.Size))
	}
	return info, data, nil
}

// WriteSnapshot implements backend.SnapshotStore: one transaction of its
// own (never a store's write transaction: it takes no lock a fold waits
// for; the session row is only key-share locked by the foreign key, which
// a fold's update of it does not conflict with). The snapshot's row is
// locked first, so that concurrent writers of one session write one after
// the other and the lead check sees the other's result.
func (s *session) WriteSnapshot(kind string, rev backend.Revision, data []byte, minLead int64) (bool, error) {
	ctx, cancel := opCtx()
	defer cancel()
	id, err := s.id(ctx)
	if err != nil || id == 0 {
		if err == nil {
			err = errors.New("the session has no rows yet")
		}
		return false, s.fail("write the shared snapshot", err)
	}
	sum := sha256.Sum256(data)
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO cf_snapshots (session_id, kind, generation, rev, size, sha256, chunks)
		VALUES ($1, $2, 0, 0, 0, '', 0) ON CONFLICT DO NOTHING`, id, kind); err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	var old backend.Revision
	if err := tx.QueryRow(ctx, `SELECT generation, rev FROM cf_snapshots WHERE session_id = $1 AND kind = $2 FOR UPDATE`, id, kind).
		Scan(&old.Generation, &old.Seq); err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	if minLead >= 0 && old.Generation == rev.Generation && old.Seq >= rev.Seq-minLead {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM cf_snapshot_chunks WHERE session_id = $1 AND kind = $2`, id, kind); err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	n := (len(data) + SnapshotChunk - 1) / SnapshotChunk
	src := pgx.CopyFromSlice(n, func(i int) ([]any, error) {
		return []any{id, kind, int32(i), data[i*SnapshotChunk : min((i+1)*SnapshotChunk, len(data))]}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cf_snapshot_chunks"}, []string{"session_id", "kind", "seq", "data"}, src); err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE cf_snapshots SET generation = $3, rev = $4, size = $5, sha256 = $6, chunks = $7, written_at = now()
		WHERE session_id = $1 AND kind = $2`, id, kind, rev.Generation, rev.Seq, int64(len(data)), hex.EncodeToString(sum[:]), n); err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, s.fail("write the shared snapshot", err)
	}
	return true, nil
}
