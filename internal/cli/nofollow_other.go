//go:build !unix

package cli

// noFollow is 0 where the open cannot refuse a link: the file opened is
// checked against the path after the open instead.
const noFollow = 0
