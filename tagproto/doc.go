// Package tagproto reads and writes the small text protocols agents speak
// inside their replies: XML-like tags such as <response>…</response> and
// <say>…</say>, and <spawn_agents> blocks that ask for subagents. Replies
// come from language models, so the parsers are lenient, never fail with an
// error and never panic: malformed input simply yields "not found".
//
// Every function is pure: no I/O, no package state, safe for concurrent use.
//
// # Tags
//
// A tag name is matched without regard to ASCII case: with tag "response",
// <response>, <Response> and <RESPONSE> all match, and the opening and
// closing tag need not agree in case. An empty tag name never matches.
//
//   - An opening tag is "<" + name + ">", or "<" + name + a white-space
//     character + anything up to the next ">" (attributes are allowed and
//     ignored). "<responses>" and "<response/>" are not opening tags of
//     "response".
//   - A closing tag is "</" + name + optional white space + ">". So
//     "</response >" closes, "</ response>" does not.
//   - White space means the ASCII characters space, tab, newline, carriage
//     return, form feed and vertical tab.
//
// TagExtract takes the FIRST opening tag and the LAST closing tag of the
// text and returns what lies between them with leading and trailing white
// space trimmed; everything inside, nested tags included, is returned as
// written. It reports false when there is no opening tag, no closing tag, or
// the last closing tag starts before the first opening tag ends. An empty
// block yields "", true.
//
// TagStrip removes exactly the block TagExtract reads (from the start of the
// first opening tag to the end of the last closing tag) and leaves the text
// around it untouched. When TagExtract would report false the text is
// returned unchanged.
//
// TagExtractAll reads every block in order: each opening tag is paired with
// the NEAREST closing tag after it (no nesting) and the search resumes after
// that closing tag. Contents are trimmed. An opening tag without a later
// closing tag ends the search.
//
// # Spawn blocks
//
// A model without tool calling asks for subagents with a block such as
//
//	I'll split this up.
//	<spawn_agents mode="sequential">
//	  <agent task="Gather the raw data" />
//	  <agent name="code-analyst" task="Analyze the patterns" context="Go 1.26 repo" />
//	</spawn_agents>
//
// ParseSpawn reads it with these rules:
//
//   - Element and attribute names are matched without regard to ASCII case.
//     The opening tag is "<spawn_agents" followed by white space, "/" or
//     ">"; the closing tag is "</spawn_agents" + optional white space + ">".
//   - Only the first opening tag counts; the block ends at the first closing
//     tag. If there is no closing tag, or the first closing tag in the text
//     comes before the opening tag, there is no block. Later blocks are
//     ignored: one reply spawns at most once.
//   - mode="sequential" (any case, surrounding spaces ignored) gives
//     Sequential; a missing or any other mode gives Parallel.
//   - Each <agent …> element inside the block (self-closing or not) yields
//     one SpawnTask from its task, name and context attributes. Text and
//     other elements inside the block are ignored, and so are attributes
//     other than these three. If an attribute is repeated, the first wins.
//   - Attribute values may be double-quoted, single-quoted or, leniently,
//     unquoted (ending at white space, ">" or "/>"). A ">" inside a quoted
//     value does not end the tag.
//   - Inside a quoted value a backslash escapes the next character when that
//     character is a double quote, a single quote or a backslash: the
//     backslash is dropped and the character kept, so task="say \"hi\""
//     gives `say "hi"`. Any other backslash is kept as written, so Windows
//     paths and "\n" survive unchanged.
//   - The five predefined XML entities (&amp; &lt; &gt; &quot; &apos;) in
//     values are decoded, so a value written with EscapeXML reads back as it
//     was. Any other "&" is kept as written.
//   - Values are trimmed of surrounding white space. An agent whose task is
//     empty is skipped. A block without any task is no block.
//   - An element whose tag is never closed (no ">" before the end of the
//     block, or an unterminated quote) ends the reading of the block; the
//     tasks read before it are kept.
//   - SpawnBlock.Before is the text before the opening tag, trimmed.
//
// TextBeforeSpawn returns that Before text when the reply holds a block,
// and the whole reply trimmed otherwise.
//
// # Escaping
//
// EscapeXML replaces & < > " ' with their predefined entities, which makes
// a string safe both as text content and inside a single- or double-quoted
// attribute value.
package tagproto
