package sqlite

import "context"

// OpenWith opens a store with settings other than Open's, for benchmarks.
func OpenWith(ctx context.Context, path string, writers int, synchronous string) (*Store, error) {
	return open(ctx, path, options{writers: writers, synchronous: synchronous})
}
