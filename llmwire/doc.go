// Package llmwire reads what the bodies of the OpenAI and Anthropic HTTP
// APIs mean. It undoes their content codings (DecodeBody), finds a
// response's model and token usage (ExtractUsage) and a request's model
// (ParseRequestInfo), and renders requests and responses as text
// (RequestText, ParsePrompt, ResponseText), assembling a streamed answer
// from its events. ResponseUsage adds the cost (prices.Cost): it is the
// one way every view and the runner's live counter find a call's tokens,
// model and cost, so they always agree.
//
// Both sides of jukebox use it: the runner (engine) to record the model
// and usage of each call and to report them live, and the read side
// (timeline) to show them. llmwire imports tapefmt and prices and nothing
// else of jukebox; engine and timeline import it, never the other way.
package llmwire
