# The agent of testdata/compat/sdk-turns-v1.jbx: turns of two tracks
# whose transactions stage writes, recorded by an SDK that began a
# turn's transaction without a name (POST /v1/tx {"mcp_mode"}): one
# committed, one rolled back, one committed in the second track.
from jukebox import Jukebox

jb = Jukebox()
with jb.track("planning"):
    with jb.record_agent_turn("planner", "write the plan") as tx:
        tx.stage_file_write("plan.md", "# Plan\n1. draft\n2. review\n")
    try:
        with jb.record_agent_turn("planner", "a draft to drop") as tx:
            tx.stage_file_write("draft.txt", "not kept")
            raise ValueError("not needed")
    except ValueError:
        pass
with jb.track("review"):
    with jb.record_agent_turn("reviewer", "approve") as tx:
        tx.stage_file_write("review/ok.txt", "approved\n")
print("done")
