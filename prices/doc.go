// Package prices holds the price table of LLM models (models.json, in
// LiteLLM's format, embedded; Load adds or replaces models from a file of
// the same format) and the one function, Cost, that turns a call's token
// usage into US dollars. Every view of a
// run (`jukebox ls`, the turntable, `diff`, the live fork counter) and the
// breaker price calls through Cost, so they agree on the same calls.
//
// It is a leaf: it imports only tapefmt, for Usage. Finding a call's usage
// and model on a tape is llmwire's job (llmwire.ResponseUsage).
package prices
