package engine

// QuietSDKEnv are the environment variables that switch off the side
// channels of common agent SDKs and frameworks: connections they make on
// their own, past the base URL jukebox gives them, to send traces or
// telemetry. Replay and fork set them by default (a replay makes no
// connection); record sets them with RunOptions.QuietSDKs.
var QuietSDKEnv = []QuietVar{
	{"OPENAI_AGENTS_DISABLE_TRACING", "1", "OpenAI Agents SDK (Python and JavaScript): trace export to the OpenAI traces API"},
	{"LANGCHAIN_TRACING_V2", "false", "LangChain: tracing to LangSmith"},
	{"LANGSMITH_TRACING", "false", "LangSmith SDK: tracing"},
	{"OTEL_SDK_DISABLED", "true", "OpenTelemetry SDKs: every exporter, so agents instrumented with OTel send nothing"},
	{"CREWAI_DISABLE_TELEMETRY", "true", "CrewAI: anonymous telemetry"},
	{"ANONYMIZED_TELEMETRY", "False", "Chroma: anonymous telemetry"},
	{"HF_HUB_DISABLE_TELEMETRY", "1", "Hugging Face Hub: telemetry"},
	{"LITELLM_TELEMETRY", "False", "LiteLLM: telemetry"},
	{"DO_NOT_TRACK", "1", "the cross-tool convention many CLIs and SDKs honour"},
}

// QuietVar is one of QuietSDKEnv: the variable, its value, and what it
// switches off.
type QuietVar struct{ Name, Value, Off string }
