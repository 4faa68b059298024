package storetest

import (
	"os"
	"strings"
	"testing"
)

// CreateTable returns the CREATE TABLE statement of table in the migration
// file at path, without its closing semicolon: for a test that takes a
// database back to a schema before a later migration replaced the table.
func CreateTable(t testing.TB, path, table string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "CREATE TABLE "+table+" (")
	j := strings.IndexByte(s[max(i, 0):], ';')
	if i < 0 || j < 0 {
		t.Fatalf("%s has no table %s", path, table)
	}
	return s[i : i+j]
}
