package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
)

// CreateDeviceCode implements [data.Store.CreateDeviceCode]. The count
// and the insert run under a transaction-scoped advisory lock on the
// client, so replicas creating codes for one client at once take turns
// and the cap holds across them.
func (s *Store) CreateDeviceCode(ctx context.Context, d data.DeviceCode, max int) error {
	if err := s.begin(ctx, "create device code"); err != nil {
		return err
	}
	if err := data.ValidateDeviceCode(d); err != nil {
		return fmt.Errorf("create device code: %w", err)
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('oauthd device ' || $1, 0))", d.ClientID); err != nil {
			return fmt.Errorf("create device code: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM device_codes WHERE client_id = $1 AND expires_ns > $2",
			d.ClientID, unixNano(d.CreatedAt)).Scan(&n); err != nil {
			return fmt.Errorf("create device code: %w", err)
		}
		if n >= max {
			return fmt.Errorf("create device code: %w", data.ErrTooManyDeviceCodes)
		}
		tag, err := tx.Exec(ctx, "INSERT INTO device_codes (user_code, client_id, expires_ns, body) VALUES ($1, $2, $3, $4) ON CONFLICT (user_code) DO NOTHING",
			d.UserCode, d.ClientID, unixNano(d.ExpiresAt), encode(d))
		if err != nil {
			return fmt.Errorf("create device code: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("create device code: %w", data.ErrExists)
		}
		return nil
	})
}

// GetDeviceCode implements [data.Store.GetDeviceCode].
func (s *Store) GetDeviceCode(ctx context.Context, userCode string) (data.DeviceCode, error) {
	if err := s.begin(ctx, "get device code"); err != nil {
		return data.DeviceCode{}, err
	}
	d, err := queryOne[data.DeviceCode](ctx, s.pool, "SELECT body FROM device_codes WHERE user_code = $1", userCode)
	if err != nil {
		return data.DeviceCode{}, fmt.Errorf("get device code: %w", err)
	}
	return d, nil
}

// UpdateDeviceCode implements [data.Store.UpdateDeviceCode]: the row is
// read FOR UPDATE, so concurrent updates (two polls, an approval and a
// poll) on any replicas run one after the other.
func (s *Store) UpdateDeviceCode(ctx context.Context, userCode string, update func(data.DeviceCode) (data.DeviceCode, error)) (data.DeviceCode, error) {
	if err := s.begin(ctx, "update device code"); err != nil {
		return data.DeviceCode{}, err
	}
	var out data.DeviceCode
	err := s.tx(ctx, func(tx pgx.Tx) error {
		old, err := queryOne[data.DeviceCode](ctx, tx, "SELECT body FROM device_codes WHERE user_code = $1 FOR UPDATE", userCode)
		if err != nil {
			return fmt.Errorf("update device code: %w", err)
		}
		next, err := update(data.Normalize(old)) // a copy: update may change it
		if err != nil {
			return err
		}
		if err := data.ValidateDeviceUpdate(old, next); err != nil {
			return fmt.Errorf("update device code: %w", err)
		}
		if _, err := tx.Exec(ctx, "UPDATE device_codes SET body = $2 WHERE user_code = $1", userCode, encode(next)); err != nil {
			return fmt.Errorf("update device code: %w", err)
		}
		out = data.Normalize(next)
		return nil
	})
	if err != nil {
		return data.DeviceCode{}, err
	}
	return out, nil
}
