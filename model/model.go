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
// refused or times out, when the server stalls, and when a stream breaks,
// but only while nothing has been handed to the caller yet: once a piece of
// text was yielded, a broken stream is an error wrapping
// [cadre.ErrIncompleteStream], never a silent restart. A 429 waits as long
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
