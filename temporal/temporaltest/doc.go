// Package temporaltest tests the Temporal engine of cadre against a real
// Temporal server embedded in the test process (SQLite in memory, loopback
// only). It is a module of its own so that the server stays out of the
// cadre binary.
package temporaltest
