package export

import "go.opentelemetry.io/otel/attribute"

// The names jukebox writes, in one place. They follow the OpenTelemetry
// semantic conventions for generative AI as of semantic-conventions
// v1.40.0 (development status: names may change in later versions; when
// they do, they change here and FORMAT.md's export section says so).
// Attributes of jukebox's own are under "jukebox.".
const (
	// SemconvVersion is the version of the conventions followed, written
	// as the schema URL of every export.
	SemconvVersion = "1.40.0"
	schemaURL      = "https://opentelemetry.io/schemas/" + SemconvVersion

	opChat          = "chat"
	opTextComplete  = "text_completion"
	opEmbeddings    = "embeddings"
	opExecuteTool   = "execute_tool"
	opInvokeAgent   = "invoke_agent"
	toolTypeFunc    = "function"  // a tool the model called, run by the agent
	toolTypeExt     = "extension" // an MCP server's tool the agent called on its own
	tokenTypeInput  = "input"
	tokenTypeOutput = "output"
)

// Span and metric attributes of the conventions.
const (
	attrOperation      = attribute.Key("gen_ai.operation.name")
	attrProvider       = attribute.Key("gen_ai.provider.name")
	attrRequestModel   = attribute.Key("gen_ai.request.model")
	attrResponseModel  = attribute.Key("gen_ai.response.model")
	attrResponseID     = attribute.Key("gen_ai.response.id")
	attrFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	attrInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	attrCacheRead      = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrCacheCreation  = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	attrAgentName      = attribute.Key("gen_ai.agent.name")
	attrToolName       = attribute.Key("gen_ai.tool.name")
	attrToolCallID     = attribute.Key("gen_ai.tool.call.id")
	attrToolType       = attribute.Key("gen_ai.tool.type")
	attrToolArgs       = attribute.Key("gen_ai.tool.call.arguments") // content: --include-content only
	attrToolResult     = attribute.Key("gen_ai.tool.call.result")    // content
	attrInputMessages  = attribute.Key("gen_ai.input.messages")      // content
	attrOutputMessages = attribute.Key("gen_ai.output.messages")     // content
	attrSystem         = attribute.Key("gen_ai.system_instructions") // content
	attrTokenType      = attribute.Key("gen_ai.token.type")
	attrErrorType      = attribute.Key("error.type")
	// The request's parameters (not content: always exported).
	attrReqMaxTokens        = attribute.Key("gen_ai.request.max_tokens")
	attrReqTemperature      = attribute.Key("gen_ai.request.temperature")
	attrReqTopP             = attribute.Key("gen_ai.request.top_p")
	attrReqTopK             = attribute.Key("gen_ai.request.top_k")
	attrReqFrequencyPenalty = attribute.Key("gen_ai.request.frequency_penalty")
	attrReqPresencePenalty  = attribute.Key("gen_ai.request.presence_penalty")
	attrReqSeed             = attribute.Key("gen_ai.request.seed")
	attrReqStopSequences    = attribute.Key("gen_ai.request.stop_sequences")
	attrReqChoiceCount      = attribute.Key("gen_ai.request.choice.count")
	attrConversationID      = attribute.Key("gen_ai.conversation.id")
	attrToolDefinitions     = attribute.Key("gen_ai.tool.definitions") // content
	attrServerAddress       = attribute.Key("server.address")
	attrServerPort          = attribute.Key("server.port")
	attrHTTPStatus          = attribute.Key("http.response.status_code")
	attrHTTPMethod          = attribute.Key("http.request.method")
	attrURLPath             = attribute.Key("url.path")
	attrExitCode            = attribute.Key("process.exit.code")
	attrServiceName         = attribute.Key("service.name")
	attrHostName            = attribute.Key("host.name")
	attrServiceInstance     = attribute.Key("service.instance.id") // the tape id: each run its own series
	attrUserName            = attribute.Key("user.name")
	attrVCSRevision         = attribute.Key("vcs.ref.head.revision")
	attrVCSRef              = attribute.Key("vcs.ref.head.name")
)

// jukebox's attributes: every span carries the tape and its frame, so a
// trace leads back to `jukebox play TAPE --frame N`.
const (
	attrTapeID        = attribute.Key("jukebox.tape.id")         // the tape header's id, hex: also the trace id
	attrFrame         = attribute.Key("jukebox.frame")           // the frame the span starts at
	attrResponseFrame = attribute.Key("jukebox.response.frame")  // the llm.response frame of a chat span
	attrRunMode       = attribute.Key("jukebox.run.mode")        // record, replay, fork
	attrCostUSD       = attribute.Key("jukebox.cost.usd")        // prices.Cost of the call; left out when unpriced
	attrEstimated     = attribute.Key("jukebox.usage.estimated") // true: the answer reported no usage, the token counts and cost were counted from the text
	attrMCPServer     = attribute.Key("jukebox.mcp.server")      // the MCP server a tool call went to
)

// Metric names and units.
const (
	metricTokenUsage = "gen_ai.client.token.usage"                   // histogram, {token}
	metricDuration   = "gen_ai.client.operation.duration"            // histogram, s
	metricFirstChunk = "gen_ai.client.operation.time_to_first_chunk" // histogram, s; streamed calls only
)

// Bucket boundaries the conventions advise.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	chunkBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
)

// Event names on the run's span.
const (
	eventBreakerTrip = "jukebox.breaker.trip"
	// errBreakerRefused is error.type of a call the circuit breaker
	// refused: never sent.
	errBreakerRefused = "jukebox.breaker_refused"
	eventFork         = "jukebox.fork"
	eventTxBegin      = "jukebox.tx.begin"
	eventTxCommit     = "jukebox.tx.commit"
	eventTxRollback   = "jukebox.tx.rollback"
)

// otelProviders are the OpenTelemetry GenAI conventions' names
// (gen_ai.provider.name) of the providers whose tape names differ; the
// others are the same in both.
var otelProviders = map[string]string{"azure-openai": "azure.ai.openai", "bedrock": "aws.bedrock",
	"gemini": "gcp.gemini", "vertex": "gcp.vertex_ai", "mistral": "mistral_ai", "xai": "x_ai"}

// otelProvider is the conventions' name of a tape's provider.
func otelProvider(name string) string {
	if n, ok := otelProviders[name]; ok {
		return n
	}
	return name
}
