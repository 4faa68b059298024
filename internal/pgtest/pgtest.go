// Package pgtest gives a test or a benchmark a PostgreSQL schema of its own,
// in a database it names (CADRE_TEST_POSTGRES, which .ci/postgres.sh sets),
// so that runs of the tests never see each other's tables.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Schema creates a schema named prefix_<random> in the database base names,
// dropped with everything in it when tb ends, and returns a connection
// string whose search_path names it, and its name.
func Schema(tb testing.TB, base, prefix string) (dsn, schema string) {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = prefix + "_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("connect to CADRE_TEST_POSTGRES: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	dsn, err = WithSearchPath(base, schema)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn, schema
}

// WithSearchPath returns dsn, in either of libpq's forms, with its
// search_path set to schema.
func WithSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("CADRE_TEST_POSTGRES is not a valid URL: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " search_path=" + schema, nil
}
