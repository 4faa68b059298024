// Package loop is the deterministic state machine that drives one agent.
//
// An engine creates a State with New, feeds it Inputs through Step, and
// carries out the Actions Step returns: model calls, tool calls, spawning
// children, delivering messages. The loop owns every rule of an agent's
// turn: which tools exist and who may call them, the arguments checks it can
// make without I/O, tracking of the report to the parent (the first
// send_agent_message aimed at the parent, or a <response> tag), the single
// nudge, max turns and the final no-tools call, empty-reply failure, the
// <spawn_agents> text protocol with sequential steps and synthesis, and
// exactly-once acceptance of children's reports.
//
// The loop has no goroutines, no clock, no randomness and does no I/O. Given
// the same Config and the same Inputs in the same order, Step returns the
// same Actions: that is what makes a journaled run resumable by replay. The
// JSON of an Input is not always the Input (raw JSON is compacted, invalid
// UTF-8 becomes U+FFFD), so an engine that journals should step each Input
// as Decode reads it back from the journal, as package local does: then a
// replay steps exactly what the live agent stepped.
// A State is not safe for concurrent use; an engine gives each agent one
// owner goroutine.
//
// # Reports, exactly once
//
// A child reports once in its life. With ReportTool it is the text of its
// first send_agent_message to the parent; with ReportTag the content of
// <response>…</response> in its final text. Whatever the model does — send
// twice, send and write a tag — the loop emits one Deliver with Report set;
// later sends to the parent are delivered as ordinary follow-up messages.
// On the receiving side, a parent accepts one ChildReport per child and
// ignores repeats, so an engine that re-delivers after a crash is harmless.
package loop
