// Package export writes tapes in other tools' formats: OpenTelemetry
// (GenAI spans and metrics, offline over OTLP/HTTP, or live while a run
// records, as a tapefmt.Observer the runner is handed as its Telemetry),
// HAR and JSON. It reads tapes and llmwire; it never imports the runner
// (engine), which is handed a live export by cmd.
package export
