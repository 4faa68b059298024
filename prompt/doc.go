// Package prompt writes every text cadre puts in front of a model: system
// prompts of root agents and subagents, the catalogue of subagents a model
// may delegate to, the <spawn_agents> protocol description, and the fixed
// messages of the agent loop (nudges, final-answer requests, child reports,
// synthesis requests, onboarding).
//
// Texts that other parts of cadre, or agents' users, rely on word for word
// are exported constants. Everything else is built by pure functions of
// their arguments: no I/O, no clock, no package state, safe for concurrent
// use; the same arguments always give the same bytes, which keeps journaled
// runs replayable. Nil definitions in a slice are skipped; no function
// panics on zero values.
//
// Layout rules shared by the builders:
//
//   - Sections are separated by one blank line; empty sections are left out
//     rather than rendered empty.
//   - Soul, identity and guidance texts are trimmed and wrapped in
//     <soul>, <identity> and <project_guidance> tags.
//   - A definition's prompt is used verbatim, byte for byte (Child).
//   - Catalogues list only user-facing definitions, sorted by name.
//   - Values placed inside XML attributes are escaped with
//     tagproto.EscapeXML; text content (reports, outputs, prompts) is not.
//
// The golden files under testdata show every builder's output; regenerate
// them with `go test ./prompt -update` after a deliberate change.
package prompt
