package memory

import (
	"context"
	"fmt"

	"oauthd/data"
)

// CreateDeviceCode implements [data.Store.CreateDeviceCode].
func (s *Store) CreateDeviceCode(ctx context.Context, d data.DeviceCode, max int) error {
	if err := s.lock(ctx, "create device code"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := data.ValidateDeviceCode(d); err != nil {
		return fmt.Errorf("create device code: %w", err)
	}
	if _, ok := s.devices[d.UserCode]; ok {
		return fmt.Errorf("create device code: %w", data.ErrExists)
	}
	n := 0
	for _, o := range s.devices {
		if o.ClientID == d.ClientID && o.ExpiresAt.After(d.CreatedAt) {
			n++
		}
	}
	if n >= max {
		return fmt.Errorf("create device code: %w", data.ErrTooManyDeviceCodes)
	}
	s.devices[d.UserCode] = data.Normalize(d)
	return nil
}

// GetDeviceCode implements [data.Store.GetDeviceCode].
func (s *Store) GetDeviceCode(ctx context.Context, userCode string) (data.DeviceCode, error) {
	if err := s.lock(ctx, "get device code"); err != nil {
		return data.DeviceCode{}, err
	}
	defer s.mu.Unlock()
	d, ok := s.devices[userCode]
	if !ok {
		return data.DeviceCode{}, fmt.Errorf("get device code: %w", data.ErrNotFound)
	}
	return data.Normalize(d), nil
}

// UpdateDeviceCode implements [data.Store.UpdateDeviceCode].
func (s *Store) UpdateDeviceCode(ctx context.Context, userCode string, update func(data.DeviceCode) (data.DeviceCode, error)) (data.DeviceCode, error) {
	if err := s.lock(ctx, "update device code"); err != nil {
		return data.DeviceCode{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.devices[userCode]
	if !ok {
		return data.DeviceCode{}, fmt.Errorf("update device code: %w", data.ErrNotFound)
	}
	next, err := update(data.Normalize(old))
	if err != nil {
		return data.DeviceCode{}, err
	}
	if err := data.ValidateDeviceUpdate(old, next); err != nil {
		return data.DeviceCode{}, fmt.Errorf("update device code: %w", err)
	}
	next = data.Normalize(next)
	s.devices[userCode] = next
	return data.Normalize(next), nil
}
