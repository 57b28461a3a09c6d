// Package llmwire reads what the bodies of the model providers' HTTP APIs
// mean. Recognize says which requests are model calls, by host and path,
// and of which provider (OpenAI and the OpenAI-compatible hosts, Azure
// OpenAI, Anthropic, Gemini, Vertex, Bedrock, Mistral, Cohere, Ollama,
// vLLM). It undoes content codings (DecodeBody), finds an answer's model
// and token usage by its provider's format (ReadUsage; ExtractUsage for
// OpenAI's and Anthropic's), Bedrock's AWS event-stream framing included,
// and a request's model (ParseRequestInfo, PathModel), and renders
// requests and answers as text (RequestText, ParsePrompt, ResponseText,
// AnswerText), assembling a streamed answer from its events.
// ResponseUsage adds the cost (prices.Cost), and counts the usage an
// answer does not report (CountTokens: the model's embedded BPE, else 4
// bytes a token), marked Estimated: it is the one way every view, the
// breaker and the runner's live counter find a call's tokens, model and
// cost, so they always agree.
//
// Both sides of jukebox use it: the runner (engine) to record the model
// and usage of each call and to report them live, and the read side
// (timeline) to show them. llmwire imports tapefmt and prices and nothing
// else of jukebox; engine and timeline import it, never the other way.
package llmwire
