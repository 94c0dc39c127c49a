package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"oauthd/data"
	"time"

	"github.com/jackc/pgx/v5"
)

// GetFamily implements [data.Store.GetFamily].
func (s *Store) GetFamily(ctx context.Context, id string) (data.Family, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "get family")
	defer span.End()
	if err := s.begin(ctx, "get family"); err != nil {
		return data.Family{}, err
	}
	f, err := queryOne[data.Family](ctx, s.pool, "SELECT body FROM families WHERE id = $1", id)
	if err != nil {
		return data.Family{}, fmt.Errorf("get family %q: %w", id, err)
	}
	return f, nil
}

// RotateRefreshToken implements [data.Store.RotateRefreshToken] as a
// compare-and-swap: it takes the family and its version (famAt: read, or
// this store's guess), decides in this process (a constant-time hash
// comparison, then update), and writes or deletes only if the version is
// still that one (rotateAt). A write that lost to a concurrent one (or to
// a stale guess) matches no row; the delete and the promised write then
// return, in the same statement, the family as it is, and the loop decides
// again on that without another read. So of n concurrent rotations with
// the same token exactly one stores its successor, and the others find a
// token that is no longer current, which revokes the family.
//
// Round trips (each one statement, autocommitted, one durable commit at
// most): one when this process rotated or created the family last
// (famCache: the read is skipped); one too when another replica rotated
// since (replicas taking turns on one family) and the caller made the
// rotation promise (data.WithPresented, as the refresh grant does): the
// stale guess, with the presented token as current, is written where the
// stored family is that (rotatePromised). Two otherwise: a read and the
// write when this process has no guess; the conditional write, which
// misses and returns the family, then the write, when the promised write
// finds the presented token is not the current one (a replay, the grace)
// or the family changed in more than a rotation changes (narrowed
// elsewhere), or when a guess judged a replay (without the promise) is
// stale. A rotation decided on a guess whose write misses (a race) reads:
// three.
func (s *Store) RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "rotate refresh token")
	defer span.End()
	if err := s.begin(ctx, rotateOp); err != nil {
		return data.Family{}, err
	}
	var cur famAt
	e, known := s.fams.get(id)
	if known {
		cur = famAt{version: e.version, fam: e.fam, guessed: true}
	}
	if p := data.Presented(ctx); known && len(p) > 0 && !data.Equal(e.fam.TokenHash, p) {
		// The guess is stale (another replica rotated since): one
		// conditional write on the rotation promise (data.WithPresented).
		r := s.rotatePromised(ctx, id, e.fam, p, update)
		if r.done {
			return r.fam, r.err
		}
		cur, known = r.next, r.found
	}
	for attempt := 1; ; attempt++ {
		if !known {
			var err error
			if cur, err = s.readFamily(ctx, id); err != nil {
				return data.Family{}, err
			}
		}
		r := s.rotateAt(ctx, id, cur, update)
		if r.done {
			return r.fam, r.err
		}
		if attempt >= maxAttempts {
			return data.Family{}, fmt.Errorf("%s: family %q: %w: it kept changing", rotateOp, id, data.ErrConflict)
		}
		cur, known = r.next, r.found
	}
}

// rotateOp names a rotation in its errors.
const rotateOp = "rotate refresh token"

// famAt is a family at a version: as read, as a statement that missed
// returned it, or as this store last wrote it (guessed: famCache's entry,
// shared, so never changed in place).
type famAt struct {
	version int64
	fam     data.Family
	guessed bool
}

// attempt is where one try of a rotation left it: decided (done: fam and
// err are the rotation's result), or to be decided again on next (found)
// or on the family read afresh.
type attempt struct {
	done  bool
	fam   data.Family
	err   error
	found bool
	next  famAt
}

// readFamily reads the family id at its version.
func (s *Store) readFamily(ctx context.Context, id string) (famAt, error) {
	var version int64
	var b []byte
	err := s.pool.QueryRow(ctx, "SELECT version, body FROM families WHERE id = $1", id).Scan(&version, &b)
	if errors.Is(err, pgx.ErrNoRows) {
		s.fams.drop(id)
		return famAt{}, fmt.Errorf("%s: family %q: %w", rotateOp, id, data.ErrNotFound)
	}
	if err != nil {
		return famAt{}, fmt.Errorf("%s: %w", rotateOp, err)
	}
	f, err := decode[data.Family](b)
	if err != nil {
		return famAt{}, fmt.Errorf("%s: %w", rotateOp, err)
	}
	return famAt{version: version, fam: f}, nil
}

// rotateAt is one try of a rotation on cur: update decides (on a copy), and
// its successor, or the family's revocation (revokeAt), is written only if
// the family is still at cur's version. Every write is conditional on the
// version, so a decision taken on a record that has since changed never
// takes effect: the caller asks update again on the record the write
// found, or reads.
func (s *Store) rotateAt(ctx context.Context, id string, cur famAt, update func(data.Family) (data.Family, error)) attempt {
	next, uerr := update(data.Normalize(cur.fam))
	switch {
	case errors.Is(uerr, data.ErrTokenReused):
		return s.revokeAt(ctx, id, cur, uerr)
	case uerr != nil && cur.guessed:
		// A refusal decided on a guess is not final: the record may
		// have moved on at another replica (a later expiry, say). Read
		// it and ask again.
		s.fams.drop(id)
		return attempt{}
	case uerr != nil:
		return attempt{done: true, err: uerr}
	case next.ID != id || next.ClientID != cur.fam.ClientID:
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, &data.RuleError{Field: "family", Reason: "a rotation cannot change the family or client ID"})}
	}
	won, err := s.rotateWrite(ctx, id, cur.version, familyExpiry(next), encode(next))
	switch {
	case err != nil:
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, err)}
	case won:
		s.fams.put(id, cur.version+1, next)
		return attempt{done: true, fam: data.Normalize(next)}
	}
	s.fams.drop(id) // lost a race, or a stale guess: read
	s.stats.casLost.Add(1)
	return attempt{}
}

// revokeAt deletes the family id with its tombstone, after update found a
// reused token (reuse), if the family is still at cur's version; the
// stored record (cur's, not update's argument, which update may have
// changed) names the tombstone and is returned with reuse. Otherwise the
// family as the delete found it.
func (s *Store) revokeAt(ctx context.Context, id string, cur famAt, reuse error) attempt {
	var miss casMiss
	err := retry(ctx, func() (err error) {
		miss, err = s.deleteFamilyAt(ctx, id, cur.version, cur.fam)
		return err
	})
	if err != nil {
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, err)}
	}
	s.fams.drop(id)
	if miss.done {
		return attempt{done: true, fam: data.Normalize(cur.fam), err: reuse}
	}
	return s.missed(id, miss)
}

// missed is the attempt after a conditional statement on the family id
// that did not write: gone, or the family as the statement found it, to
// decide again on.
func (s *Store) missed(id string, miss casMiss) attempt {
	if miss.gone {
		return attempt{done: true, err: fmt.Errorf("%s: family %q: %w", rotateOp, id, data.ErrNotFound)}
	}
	s.stats.casLost.Add(1)
	f, err := decode[data.Family](miss.body)
	if err != nil {
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, err)}
	}
	return attempt{found: true, next: famAt{version: miss.version, fam: f}}
}

// promisedSQL stores the successor $3 (expiry $2) of the family $1 if it is the
// rotation of the stored family by update's rotation promise
// (data.WithPresented): its token hash is the presented one ($4, as JSON),
// every field but those the promise leaves out ($6) is the guess's ($5),
// and its expiry is no earlier than the guess's ($7). The successor
// takes the stored generation plus one. Otherwise the family is returned
// as it is (casMissSelect).
const promisedSQL = `WITH w AS (
	UPDATE families SET version = version + 1, expires_ns = $2, gc_ns = least(gc_ns, $2),
		body = jsonb_set($3::jsonb, '{generation}', to_jsonb(coalesce((body->>'generation')::numeric, 0) + 1))
	WHERE id = $1 AND body->'token_hash' = $4::jsonb AND body - $6::text[] = $5::jsonb - $6::text[] AND expires_ns >= $7
	RETURNING version, body)
` + casMissSelect

// promiseFree are the JSON fields of a family that the rotation promise
// lets differ between the guess and the stored family.
var promiseFree = []string{"token_hash", "prev_hash", "rotated_at", "expires_at", "generation"}

// rotatePromised rotates the family id in one statement on the rotation
// promise (data.WithPresented), from the stale guess g (famCache's entry:
// not changed here) and the presented hash: update decides on a copy of g
// with TokenHash set to presented, and promisedSQL writes only where that
// decision is the one update would take on the stored family. Otherwise
// the family as the write found it; or, when update refuses, nothing (the
// caller reads the family and asks update again).
func (s *Store) rotatePromised(ctx context.Context, id string, g data.Family, presented []byte, update func(data.Family) (data.Family, error)) attempt {
	h := data.Normalize(g)
	h.TokenHash = presented
	next, err := update(h)
	if err != nil || next.ID != id || next.ClientID != g.ClientID {
		s.fams.drop(id)
		return attempt{}
	}
	tok, err := json.Marshal(presented)
	if err != nil {
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, err)}
	}
	var miss casMiss
	err = retry(ctx, func() (err error) {
		miss, err = scanMiss(s.pool.QueryRow(ctx, promisedSQL, id, familyExpiry(next), encode(next),
			json.RawMessage(tok), encode(g), promiseFree, familyExpiry(g)))
		return err
	})
	if err != nil {
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, err)}
	}
	if !miss.done {
		s.fams.drop(id)
		return s.missed(id, miss)
	}
	f, err := decode[data.Family](miss.body)
	if err != nil {
		return attempt{done: true, err: fmt.Errorf("%s: %w", rotateOp, err)}
	}
	s.fams.put(id, miss.version, f)
	return attempt{done: true, fam: f}
}

// rotateSQL stores a family's successor if its version is still $2 (alone;
// rotateBatchSQL for several rotations at once, see rotateWrite). A
// plain UPDATE: this is the write of every rotation on a right guess, and
// returning the family on a miss (casMissSelect) cost it measurably more
// CPU on both sides (docs/PERFORMANCE.md); a miss here (a race, or a
// stale guess with the same current token) is rare and reads.
const rotateSQL = `UPDATE families SET version = version + 1, expires_ns = $3, gc_ns = least(gc_ns, $3), body = $4
	WHERE id = $1 AND version = $2`

// casMissSelect ends a conditional write on the family $1 whose CTE w
// returns (version, body) when it wrote: one row, (true, w's version,
// w's body) when it wrote,
// else (false, version, body) of the family as the statement's snapshot
// has it; no row when the family is gone. In READ COMMITTED that snapshot
// may be a little older than the row the write found (a concurrent
// commit in between): the next conditional write then misses again.
const casMissSelect = `SELECT true, w.version, w.body FROM w
UNION ALL
SELECT false, f.version, f.body FROM families f WHERE f.id = $1 AND NOT EXISTS (SELECT 1 FROM w)`

// casMiss is what a conditional write on a family found.
type casMiss struct {
	done    bool   // it wrote
	gone    bool   // it did not: the family no longer exists
	version int64  // else the family's version
	body    []byte // and body
}

func scanMiss(row pgx.Row) (casMiss, error) {
	var m casMiss
	err := row.Scan(&m.done, &m.version, &m.body)
	if errors.Is(err, pgx.ErrNoRows) {
		return casMiss{gone: true}, nil
	}
	return m, err
}

// DeleteFamily implements [data.Store.DeleteFamily].
func (s *Store) DeleteFamily(ctx context.Context, id string) error {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "delete family")
	defer span.End()
	if err := s.begin(ctx, "delete family"); err != nil {
		return err
	}
	defer s.fams.drop(id)
	var version int64
	var b []byte
	err := s.pool.QueryRow(ctx, "SELECT version, body FROM families WHERE id = $1", id).Scan(&version, &b)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("delete family %q: %w", id, data.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete family %q: %w", id, err)
	}
	for attempt := 1; ; attempt++ {
		f, err := decode[data.Family](b)
		if err != nil {
			return fmt.Errorf("delete family %q: %w", id, err)
		}
		var miss casMiss
		err = retry(ctx, func() (err error) {
			miss, err = s.deleteFamilyAt(ctx, id, version, f)
			return err
		})
		switch {
		case err != nil:
			return fmt.Errorf("delete family %q: %w", id, err)
		case miss.done:
			return nil
		case miss.gone:
			return fmt.Errorf("delete family %q: %w", id, data.ErrNotFound)
		}
		// Rotated since the read: again on the family as the delete
		// found it, so that the tombstone names its last issuance.
		s.stats.casLost.Add(1)
		if attempt >= maxAttempts {
			return fmt.Errorf("delete family %q: %w: it kept changing", id, data.ErrConflict)
		}
		version, b = miss.version, miss.body
	}
}

// deleteFamilySQL deletes a family at a version and stores its tombstone;
// a family at another version is returned as it is (casMissSelect).
const deleteFamilySQL = `WITH w AS (DELETE FROM families WHERE id = $1 AND version = $2 RETURNING version, NULL::jsonb AS body),
t AS (INSERT INTO revoked_grants (grant_id, issued_ns, body) SELECT $1, $3, $4 FROM w ` + tombstoneUpsert + `)
` + casMissSelect

// putTombstoneSQL stores a tombstone ($1 grant ID, $2 issued_ns, $3 body).
const putTombstoneSQL = `INSERT INTO revoked_grants (grant_id, issued_ns, body) VALUES ($1, $2, $3) ` + tombstoneUpsert

// tombstoneUpsert keeps a grant's latest tombstone.
const tombstoneUpsert = `ON CONFLICT (grant_id) DO UPDATE SET issued_ns = excluded.issued_ns, body = excluded.body`

// deleteFamilyAt deletes the family id if its version is still version,
// and stores the tombstone of f (the record at that version) in the same
// statement; otherwise it returns the family as it is.
func (s *Store) deleteFamilyAt(ctx context.Context, id string, version int64, f data.Family) (casMiss, error) {
	r := data.RevocationOf(f)
	return scanMiss(s.pool.QueryRow(ctx, deleteFamilySQL, id, version, unixNano(r.LastIssuedAt), encode(r)))
}

// ListRevoked implements [data.Store.ListRevoked].
func (s *Store) ListRevoked(ctx context.Context, since time.Time) ([]data.Revocation, error) {
	if err := s.begin(ctx, "list revoked"); err != nil {
		return nil, err
	}
	rs, err := queryAll[data.Revocation](ctx, s.pool, "SELECT body FROM revoked_grants WHERE issued_ns >= $1 ORDER BY grant_id", unixNano(since))
	if err != nil {
		return nil, fmt.Errorf("list revoked: %w", err)
	}
	return rs, nil
}

// ListFamilies implements [data.Store.ListFamilies], ordered by ID.
func (s *Store) ListFamilies(ctx context.Context, clientID string) ([]data.Family, error) {
	if err := s.begin(ctx, "list families"); err != nil {
		return nil, err
	}
	var fs []data.Family
	var err error
	if clientID == "" {
		fs, err = queryAll[data.Family](ctx, s.pool, "SELECT body FROM families ORDER BY id")
	} else {
		fs, err = queryAll[data.Family](ctx, s.pool, "SELECT body FROM families WHERE client_id = $1 ORDER BY id", clientID)
	}
	if err != nil {
		return nil, fmt.Errorf("list families: %w", err)
	}
	return fs, nil
}

// ListUserFamilies implements [data.Store.ListUserFamilies] on the
// families_user index, ordered by client ID, then ID.
func (s *Store) ListUserFamilies(ctx context.Context, userID int64) ([]data.Family, error) {
	if err := s.begin(ctx, "list user families"); err != nil {
		return nil, err
	}
	fs, err := queryAll[data.Family](ctx, s.pool, "SELECT body FROM families WHERE user_id = $1 ORDER BY client_id, id", userID)
	if err != nil {
		return nil, fmt.Errorf("list user families: %w", err)
	}
	return fs, nil
}
