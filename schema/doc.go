// Package schema checks JSON values against the part of JSON Schema that
// tool parameters and report schemas use: "type" (one name or a list),
// "properties", "required", "enum", "const", "additionalProperties" (false
// or a schema) and "items" (a schema), applied recursively; other keywords
// are ignored. Package tool checks tool calls' arguments with it, and
// package loop the reports of agents that have an output schema.
//
// The package is pure: no I/O, no clock, no package state that changes.
// Every function and a compiled *Schema are safe for concurrent use, and
// malformed schemas or values never make it panic.
//
// # Errors
//
// Validate and Schema.Check return a *ValidationError listing every problem
// found, in words a model can act on. A schema that cannot be read is
// reported with an error wrapping ErrInvalid.
package schema
