package store

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ReceiptSeed returns the receipt signing seed kept in Redis under the
// prefix's receipt:key (see Options.Prefix; empty: DefaultPrefix),
// storing generate's the first time, so that every replica on one Redis
// signs with one key when RECEIPT_KEY is not set. created reports that
// this call stored it. The key has no TTL: receipts already handed out
// verify as long as the key stays in the JWKS.
func ReceiptSeed(ctx context.Context, rdb redis.UniversalClient, prefix string, generate func() ([]byte, error)) (seed []byte, created bool, err error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	key := prefix + "receipt:key"
	fresh, err := generate()
	if err != nil {
		return nil, false, err
	}
	created, err = rdb.SetNX(ctx, key, base64.StdEncoding.EncodeToString(fresh), 0).Result()
	if err != nil {
		return nil, false, fmt.Errorf("receipt key: %w", err)
	}
	if created {
		return fresh, true, nil
	}
	stored, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return nil, false, fmt.Errorf("receipt key: %w", err)
	}
	if seed, err = base64.StdEncoding.DecodeString(stored); err != nil {
		return nil, false, fmt.Errorf("receipt key %s is not base64", key)
	}
	return seed, false, nil
}
