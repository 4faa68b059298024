// Package model holds what cadre's model providers share: the retry policy
// and its loop ([Stream]), the stall watchdog, the classification of
// failures ([ServerError], [Retryable], [Unreachable]), the usage estimate
// for servers that count nothing ([EstimateUsage]), the bound on the images
// and sounds of one request ([MediaLimit]) and the parsing of
// "provider:model" names ([ParseName]).
//
// The providers live in sub-packages: openai (OpenAI and every
// OpenAI-compatible server, Ollama included), anthropic, and scripted (a
// deterministic model for tests and demos). Package modeltest is the
// conformance suite the HTTP providers pass.
//
// Retries: a call is retried, with exponential backoff and full jitter, when
// the server answers 408, 409, 429 or 5xx, when the connection is reset,
// refused or times out, when the server stalls, when a stream breaks, and
// when it sends an event that is not valid JSON ([ErrInvalidReply]). A
// stream that breaks after some of its text was handed to the caller is
// retried the same way, within the same attempts, never silently: the
// caller first receives a chunk with [cadre.Chunk.Restart] set, which voids
// the text so far, and the final response is the reply of the last try
// alone. When the attempts run out, the error wraps
// [cadre.ErrIncompleteStream] if the last try had started its reply, and
// says how many attempts were made. A 429 waits as long
// as its Retry-After header asks (seconds or an HTTP date), capped by
// [RetryPolicy.MaxDelay]. Other statuses (400, 401, 403, 404…) fail at
// once, and so do answers that are not event streams ([ErrNotStream]) and
// replies that spent their token limit on nothing ([ErrMaxTokens]).
//
// Stalls: a try whose server sends nothing, neither headers nor a byte of
// the stream, for [Call.StallTimeout] ([DefaultStallTimeout] unless set) is
// abandoned with an error wrapping [ErrStalled], so that a silent server
// is never a hang.
//
// Every failure reaches the caller as a *[cadre.ModelError] whose Hint says
// what to check: the key variable after a 401 or 403, the model name after
// a 403 or 404, the base URL when the server cannot be reached. Its message
// and hint never show the API key or the password of a base URL
// ([Call.Redactor]), even when the server quotes them back.
//
// Nothing in this package keeps state between calls; everything is safe for
// concurrent use.
package model
