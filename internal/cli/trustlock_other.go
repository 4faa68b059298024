//go:build !unix

package cli

// lockTrust does nothing where cadre cannot take a file lock: two
// processes trusting projects at the same instant may lose one of them.
func lockTrust(string) (func(), error) { return func() {}, nil }
