// Package scripted is a deterministic [cadre.Model] that plays a script: the
// model behind cadre's tests, its demo and its benchmarks. It makes no
// network call, keeps no clock except for a scripted delay, and is cheap
// enough to drive ten thousand agents.
//
// # Script files
//
// A script is YAML (JSON is valid YAML), decoded strictly: an unknown field
// is an error that names its file, line and column. It maps keys to lists of
// replies:
//
//	# The root delegates, then reports.
//	root:
//	  - text: "I will ask the researcher."
//	    tool_calls:
//	      - name: spawn_agent
//	        arguments: {agent: researcher, task: "Find the release date."}
//	  - text: "The release is on 3 March."
//
//	# Every agent run from the researcher definition.
//	researcher:
//	  - when: "haven't sent your results" # only when the new input says so
//	    tool_calls:
//	      - name: send_agent_message
//	        arguments: {text: "3 March, sorry for the delay."}
//	  - text: "Looking it up."
//	    tool_calls:
//	      - name: read_file
//	        arguments: '{"path": "CHANGELOG.md"'   # a raw string: invalid JSON on purpose
//	  - text: "It is 3 March."
//
//	# Any other agent, on every turn.
//	"*":
//	  - text: "Nothing to add."
//	    repeat: true
//
// # Choosing a reply
//
// A request carries the calling agent's ID ("root/researcher.2") and its
// Turn, the 1-based number of its model call (when Turn is 0 the model counts
// the agent's calls itself). The key is chosen first, and only one key is
// ever used for a request:
//
//  1. the agent ID itself ("root/researcher.2");
//  2. the definition name: the ID's last segment without its ".N" suffix
//     ("researcher");
//  3. glob patterns (path.Match syntax, such as "root/*" or "research*"),
//     each tried against the ID and then the definition name; patterns
//     with more literal characters are tried first, ties in byte order;
//  4. "*".
//
// Within the key's list, replies with a "when" are set apart from the
// others. The new input of a request is every message after the last
// assistant message (the task, tool results, a nudge, an inbox message).
//
//  1. The first reply with a "when" (in list order) whose text occurs in the
//     new input is played, whatever the turn.
//  2. Otherwise the replies without "when" are the turns: the k-th of them
//     answers turn k.
//  3. A turn past the end of that list is answered by its last reply if it
//     says repeat: true; otherwise the call fails with a *[NoReplyError]
//     naming the agent, the turn, the key and the script file.
//
// # Reply fields
//
//	text        the reply's text, streamed in a few chunks
//	tool_calls  a list of {id, name, arguments}; arguments is a YAML object
//	            (sent as JSON) or a string (sent as is, to script invalid
//	            JSON); id defaults to "call_<turn>_<n>"
//	usage       {input, output} tokens; by default an estimate of a quarter
//	            of the bytes sent and received
//	stop_reason as a provider reports it; default "tool_calls" when there
//	            are tool calls, else "stop"
//	delay       a Go duration ("150ms") to wait before the first chunk;
//	            the caller's context cuts it short
//	hang        true: after the text, block until the caller's context is
//	            done, and fail with its error
//	error       the call fails with this message, after streaming the text
//	status      an HTTP-like status (429, 500…) the call fails with, after
//	            the text, as a *cadre.ModelError with that Status
//	when        see above
//	repeat      see above; only on the last reply without "when"
//
// A scripted model does not retry: a scripted 429 reaches the caller as it
// would after a provider gave up.
//
// # Go tests
//
// Scripts can be built in Go ([Script], [Reply], [New]), and [Func] turns a
// function into a model. Either way the model counts calls per agent and
// turn ([Model.Calls]) and keeps the first requests it received
// ([Model.Requests], bounded by [Model.SetRecordLimit]) so tests can assert
// what each agent was sent.
//
// A Model is safe for concurrent use.
package scripted
