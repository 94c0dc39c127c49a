package bolt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"oauthd/data"
)

// Device codes live in a cold bucket (bucketDevices), written by bbolt
// transactions: a few per device sign-in, bounded per client by
// CreateDeviceCode's max, so a scan of the bucket stays small.

// CreateDeviceCode implements [data.Store.CreateDeviceCode]: the count
// and the insert are one bbolt write transaction (one writer at a time).
func (s *Store) CreateDeviceCode(ctx context.Context, d data.DeviceCode, max int) error {
	if err := data.ValidateDeviceCode(d); err != nil {
		return fmt.Errorf("create device code: %w", err)
	}
	d = data.Normalize(d)
	return s.update(ctx, "create device code", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketDevices)
		if b.Get([]byte(d.UserCode)) != nil {
			return fmt.Errorf("create device code: %w", data.ErrExists)
		}
		n := 0
		err := b.ForEach(func(_, v []byte) error {
			var o data.DeviceCode
			if err := jsonUnmarshal(v, &o); err != nil {
				return err
			}
			if o.ClientID == d.ClientID && o.ExpiresAt.After(d.CreatedAt) {
				n++
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("create device code: %w", err)
		}
		if n >= max {
			return fmt.Errorf("create device code: %w", data.ErrTooManyDeviceCodes)
		}
		return put(b, []byte(d.UserCode), d)
	})
}

// GetDeviceCode implements [data.Store.GetDeviceCode].
func (s *Store) GetDeviceCode(ctx context.Context, userCode string) (data.DeviceCode, error) {
	var d data.DeviceCode
	err := s.view(ctx, "get device code", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketDevices)
		if b == nil { // a read-only file that never had one
			return fmt.Errorf("get device code: %w", data.ErrNotFound)
		}
		ok, err := get(b, []byte(userCode), &d)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("get device code: %w", data.ErrNotFound)
		}
		return nil
	})
	return d, err
}

// UpdateDeviceCode implements [data.Store.UpdateDeviceCode].
func (s *Store) UpdateDeviceCode(ctx context.Context, userCode string, update func(data.DeviceCode) (data.DeviceCode, error)) (data.DeviceCode, error) {
	var next data.DeviceCode
	err := s.update(ctx, "update device code", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketDevices)
		var old data.DeviceCode
		ok, err := get(b, []byte(userCode), &old)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("update device code: %w", data.ErrNotFound)
		}
		if next, err = update(data.Normalize(old)); err != nil { // a copy: update may change it
			return err
		}
		if err := data.ValidateDeviceUpdate(old, next); err != nil {
			return fmt.Errorf("update device code: %w", err)
		}
		next = data.Normalize(next)
		return put(b, []byte(userCode), next)
	})
	if err != nil {
		return data.DeviceCode{}, err
	}
	return next, nil
}

// sweepDevices removes the device codes whose ExpiresAt is before now.
func (s *Store) sweepDevices(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.update(ctx, "sweep device codes", func(tx *bbolt.Tx) error {
		n = 0
		b := tx.Bucket(bucketDevices)
		var dead [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var d data.DeviceCode
			if err := jsonUnmarshal(v, &d); err != nil {
				return err
			}
			if d.ExpiresAt.Before(now) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(dead) == 0 {
			return errUnchanged // roll back: nothing to write
		}
		for _, k := range dead {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(dead)
		return nil
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	return n, err
}
