package main

// Help methods give each command's --help a few worked examples.

// Help shows record examples.
func (c *RecordCmd) Help() string {
	return `Examples:
  jukebox record -- python agent.py
  jukebox record --name triage -o triage.jbx -- node agent.mjs --task 42
  jukebox record --upstream openai=http://127.0.0.1:8931/v1 -- python agent.py   # the scripted model
  jukebox record --booth --commit on-success -- python agent.py                  # stage its file writes

The agent's SDKs reach jukebox through OPENAI_BASE_URL and ANTHROPIC_BASE_URL, which
jukebox sets; API keys pass upstream and never reach the tape. jukebox exits with
the agent's exit code.`
}

// Help shows replay examples.
func (c *ReplayCmd) Help() string {
	return `Examples:
  jukebox replay tapes/agent-20261202-093000.jbx                  # the recorded command, offline
  jukebox replay run.jbx -- python agent.py --verbose            # another command line
  jukebox replay run.jbx --speed realtime                         # streams at the recorded pace
  jukebox replay run.jbx --on-divergence live -o more.jbx         # go live where the tape ends

Exit 5 means the agent asked something the tape does not hold: the report names the
frame it expected and diffs the recorded and live request bodies.`
}

// Help shows fork examples.
func (c *ForkCmd) Help() string {
	return `Examples:
  jukebox show run.jbx --kind llm.request                          # find the frame to fork at
  jukebox fork run.jbx --frame 22 --model gpt-4o
  jukebox fork run.jbx --frame 22 --system-prompt-file terse.txt --patch '{"max_tokens": 200}'
  jukebox fork run.jbx --frame 22 --model gpt-4o,gpt-4o-mini,claude-sonnet-4 -o 'fork-{model}.jbx'
  jukebox diff run.jbx fork-gpt-4o.jbx

Calls before the fork frame come from the tape; the call at it gets the overrides and
goes live, and so does everything after it. Side effects stay in the Shadow Booth
unless --commit says otherwise.`
}

// Help shows show examples.
func (c *ShowCmd) Help() string {
	return `Examples:
  jukebox show run.jbx
  jukebox show run.jbx --frame 17 --blobs                          # one frame, bodies included
  jukebox show run.jbx --kind llm.request,llm.response
  jukebox show run.jbx --json | jq -r 'select(.kind=="llm.response") | .payload.usage'`
}
