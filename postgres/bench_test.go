package postgres_test

import (
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/storetest"
)

// BenchmarkStore is the journal benchmark every store runs (see
// storetest.Bench), each sub-benchmark in a fresh schema. It needs
// CADRE_TEST_POSTGRES, like the tests.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) cadre.Store {
		dsn, _ := schemaDSN(b)
		return open(b, dsn)
	})
}
