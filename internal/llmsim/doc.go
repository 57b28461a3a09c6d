// Package llmsim is a scripted stand-in for the OpenAI and Anthropic HTTP
// APIs. It is the upstream that jukebox records in tests and in the offline
// demo (`jukebox demo-model`); it never stands in for jukebox itself.
//
// # Wire formats
//
// A Server speaks the real wire formats, so the official SDKs work against
// it unmodified:
//
//   - OpenAI POST /v1/chat/completions: a chat.completion object, or an SSE
//     stream of chat.completion.chunk objects ("data: {...}\n\n" ... "data:
//     [DONE]\n\n") with tool_calls deltas in pieces (the first delta of a
//     call carries its index, id, type and name; the rest carry argument
//     pieces), a finish_reason chunk, and a usage chunk with empty choices
//     when stream_options.include_usage is true.
//   - OpenAI POST /v1/responses: a response object, or the SSE events
//     response.created, response.in_progress, response.output_item.added,
//     response.content_part.added, response.output_text.delta/done,
//     response.content_part.done, response.function_call_arguments.delta/
//     done, response.output_item.done and response.completed (with usage).
//   - OpenAI POST /v1/embeddings: unit vectors derived from a hash of
//     (model, input), 1536 wide unless "dimensions" says otherwise, as
//     floats or as base64 (the openai SDKs ask for base64 by default).
//   - OpenAI GET /v1/models and /v1/models/{id} (the Anthropic shape when the
//     request has an anthropic-version header).
//   - Anthropic POST /v1/messages: a message object, or the SSE events
//     message_start, content_block_start, ping, content_block_delta
//     (text_delta, input_json_delta for tool_use), content_block_stop,
//     message_delta (stop_reason and usage) and message_stop; and POST
//     /v1/messages/count_tokens.
//
// Any path prefix before "/v1" is accepted, so OPENAI_BASE_URL may be
// "http://HOST:PORT/v1" (the SDKs append "/chat/completions") and
// ANTHROPIC_BASE_URL "http://HOST:PORT" (the SDKs append "/v1/messages").
//
// Bad requests (bodies that are not JSON objects, a missing model, messages
// or max_tokens, fields of the wrong type, unknown roles) get a 400 with the
// provider's error JSON; unknown paths a 404 and wrong methods a 405.
//
// # Determinism
//
// Bodies hold no wall-clock time and no randomness: ids ("chatcmpl-…",
// "call_…", "resp_…", "msg_01…", "toolu_01…"), "created" timestamps and the
// x-request-id (OpenAI) or request-id (Anthropic) header are derived from a
// hash of (script, endpoint, request body), and token counts are estimates
// (about four characters a token for the prompt text, sixteen bytes a token
// for the rest of the request body, four characters a token for the
// answer). The same request to the same script gets the same bytes back;
// only rules with "times" keep state between requests. No Date header is
// sent, so whole responses, headers included, are reproducible. The X-Llmsim-Rule
// response header names the rule that answered ("fallback" when none did).
//
// # Script format
//
// A script is a JSON file; unknown keys are errors:
//
//	{
//	  "version": 1,
//	  "defaults": {"chunk_size": 6, "delay_ms": 4, "first_delay_ms": 30},
//	  "rules": [
//	    {
//	      "name": "write-the-file",
//	      "match": {
//	        "api": "chat",
//	        "model": "demo-*",
//	        "user": "(?i)poem",
//	        "system": "helpful",
//	        "after_tool": false,
//	        "tool_result": "^ok"
//	      },
//	      "reply": {
//	        "text": "Writing it for {{model}}.",
//	        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "{{user}}"}}]
//	      },
//	      "chunk_size": 4, "delay_ms": 20, "first_delay_ms": 200,
//	      "times": 1,
//	      "fail": {"status": 429, "type": "rate_limit_error", "message": "slow down", "retry_after": 1}
//	    }
//	  ]
//	}
//
// Rules are tried in order and the first whose match clause holds answers.
// Every match key is optional; an empty match matches every request:
//
//   - api: "chat" (chat completions), "responses" or "messages" (Anthropic).
//   - model: the request's model, exactly, or a glob where * is any run of
//     characters and ? one character ("/" is not special).
//   - user: a regexp (Go syntax, unanchored) over the text of the last user
//     message that has text (tool results are not user text, so it still
//     sees the original task during a tool loop).
//   - system: a regexp over the system prompt (system and developer
//     messages, Responses "instructions", Anthropic "system"), joined by
//     newlines.
//   - after_tool: false if the conversation must not end with a tool result;
//     true if it must; a tool name (or glob) if it must end with a result of
//     that tool (named through the tool call id that the result answers).
//   - tool_result: a regexp over the text of that final tool result.
//
// The reply has text, tool calls, or both. Tool call arguments must be a JSON
// object. In the text and in the string values of the arguments these
// templates are replaced: {{model}}, {{user}} (last user message),
// {{system}}, {{tool}} (name of the tool whose result ends the
// conversation) and {{tool_result}} (its text).
//
// Pacing: chunk_size is the runes of text, or bytes of argument JSON, per
// streamed chunk; delay_ms is slept before every chunk but the first, and
// first_delay_ms before the first (for a non-streamed answer, before the
// body). A rule's values override the script's "defaults", which override
// chunk_size 6 and no delays.
//
// times limits a rule to its first N uses since the server started; after
// that the rule is skipped. chance (above 0, at most 1) makes a rule that
// matches answer only that often: each match draws from the rule's own
// generator, seeded by the script's "seed" (0 by default) and the rule's
// place, so a model that answers at random is the same at random from run
// to run of the same requests (a bisect's --runs majorities are tested so). With fail it scripts "fail once, then succeed",
// to test retries.
//
// fail injects exactly one failure instead of (or in the middle of) the
// reply:
//
//   - "status": an HTTP error status (400..599) with the provider's error
//     JSON, built from "type" and "message" (defaults follow the status), or
//     "body" verbatim; "retry_after" adds a Retry-After header (seconds).
//   - "reset_after_chunks": N: the connection is reset (TCP RST) after N
//     chunks of the response; 0 resets before the status line. A
//     non-streamed body counts in pieces of chunk_size bytes.
//   - "hang": true, or "hang_after_chunks": N: the server stops answering
//     (after N chunks) until the client gives up or the server is closed,
//     to test client timeouts.
//
// When no rule matches, the answer is a sentence chosen by a hash of (model,
// last user message), ending in the model name and a hash tag, so changing
// either changes the answer (forks rely on this). It is paced by the
// defaults.
//
// The bundled script (DefaultScript, also testdata/llmsim/demo.json) drives
// a three-step demo agent: asked for a poem, the model calls write_file
// (poem.txt, whose text differs between "demo-large", "demo-small" and any
// other model), then read_file, then run_shell ("wc -l < poem.txt"), and
// finishes with a text answer quoting the line count. It also answers "Say
// hello…" and "Count to five…", makes model "demo-flaky" fail once with a 429,
// and answers in a pirate voice when the system prompt mentions pirates.
package llmsim
