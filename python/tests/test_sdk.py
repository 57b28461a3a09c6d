"""The SDK end to end, against the real jukebox binary ($JUKEBOX_BIN).

Run by `go test ./cmd/jukebox -run TestPythonSDK` (README's test command
runs it), which sets JUKEBOX_BIN, and JUKEBOX_PG_DSN when .ci started
PostgreSQL. By hand: JUKEBOX_BIN=$(which jukebox) python3 -m unittest
discover -s python/tests -v
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
BIN = os.environ.get("JUKEBOX_BIN", "")
PG_DSN = os.environ.get("JUKEBOX_PG_DSN", "")
REQUIRE_ALL = os.environ.get("JUKEBOX_REQUIRE_ALL") == "1"

# The example of the SDK's brief, as written, driven by argv[1] (the amount).
EXAMPLE = '''
import asyncio, json, sys
from jukebox import Jukebox, SandboxPolicy, CircuitBreaker, Tape
jb = Jukebox(tape_dir="./tapes",
             sandbox=SandboxPolicy(filesystem="copy_on_write", mcp_mode="staged_acid"),
             breaker=CircuitBreaker(max_cost_usd=0.50, max_semantic_repeat=3))

@jb.track(name="invoice-reconciliation-agent")
async def run(customer_id: str, amount_usd: float) -> dict:
    async with jb.record_agent_turn(agent_name="planner", message=f"Staging refund of ${amount_usd}",
                                    model="gpt-4o", cost_usd=0.008) as tx:
        tx.stage_file_write(path="./ledger.json", content='{"refund_usd": 12.5}')
        if amount_usd > 500.0:
            await tx.rollback(reason="Refund exceeds $500 autonomous threshold")
            return {"status": "ROLLED_BACK", "tape_id": tx.tape_id}
        return {"status": "COMMITTED", "tape_id": tx.tape_id}

print(json.dumps(asyncio.run(run("cust-1", float(sys.argv[1])))))
'''


def frames(tape):
    out = subprocess.run([BIN, "show", "--json", tape], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def kinds(tape):
    return [f["kind"] for f in frames(tape)]


class SDKBase(unittest.TestCase):
    """A scratch folder, the SDK on PYTHONPATH, scripts run in it."""

    def setUp(self):
        if not BIN:
            self.fail("JUKEBOX_BIN is not set: run through go test ./cmd/jukebox -run TestPythonSDK")
        self.dir = tempfile.mkdtemp(prefix="jukebox-sdk-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])
        # The reused server of each test's folder exits soon after its last run.
        self.env = dict(os.environ, PYTHONPATH=SDK, JUKEBOX_BIN=BIN, JUKEBOX_SERVE_IDLE="3s")
        for k in ("JUKEBOX_CONTROL", "JUKEBOX_CONTROL_TOKEN", "JUKEBOX_TAPE"):
            self.env.pop(k, None)

    def script(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def python(self, *args, env=None, check=True):
        proc = subprocess.run([sys.executable, *args], cwd=self.dir, env=env or self.env,
                              capture_output=True, text=True, timeout=120)
        if check and proc.returncode != 0:
            self.fail(f"python {' '.join(args)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def tapes(self):
        d = os.path.join(self.dir, "tapes")
        return sorted(os.path.join(d, n) for n in os.listdir(d)) if os.path.isdir(d) else []


class SDKTest(SDKBase):
    def test_example_rollback_branch(self):
        self.script("example.py", EXAMPLE)
        out = json.loads(self.python("example.py", "900").stdout)
        self.assertEqual(out["status"], "ROLLED_BACK")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "ledger.json")), "a rolled-back write reached the workspace")
        [tape] = self.tapes()
        fs = [f for f in frames(tape) if f["kind"] != "control"]  # control-API exchanges, for replay
        # A transaction's end ends a step: a crash keeps it (step.commit).
        self.assertEqual([f["kind"] for f in fs], ["run.start", "agent.turn", "tx.begin", "tx.rollback", "step.commit", "run.end"])
        turn = fs[1]["payload"]
        self.assertEqual((turn["agent"], turn["model"], turn["cost_usd"], turn["text"]),
                         ("planner", "gpt-4o", 0.008, "Staging refund of $900.0"))
        self.assertEqual(fs[3]["payload"]["reason"], "Refund exceeds $500 autonomous threshold")
        self.assertEqual(fs[0]["payload"]["name"], "invoice-reconciliation-agent")
        self.assertEqual(len(out["tape_id"]), 32)
        self.assertEqual(os.listdir(self.dir).count(".jukebox"), 0, "booth state left in the workspace")

    def test_example_commit_branch(self):
        self.script("example.py", EXAMPLE)
        out = json.loads(self.python("example.py", "12.5").stdout)
        self.assertEqual(out["status"], "COMMITTED")
        with open(os.path.join(self.dir, "ledger.json")) as f:
            self.assertEqual(f.read(), '{"refund_usd": 12.5}')
        [tape] = self.tapes()
        fs = [f for f in frames(tape) if f["kind"] != "control"]  # control-API exchanges, for replay
        self.assertEqual([f["kind"] for f in fs], ["run.start", "agent.turn", "tx.begin", "file.change", "tx.commit", "step.commit",
                                                   "run.end"])
        self.assertEqual(fs[3]["payload"]["path"], "ledger.json")
        cost = subprocess.run([BIN, "cost", "--json", tape], capture_output=True, text=True, check=True).stdout
        self.assertAlmostEqual(json.loads(cost)["total"]["reported_usd"], 0.008)

    def test_sync_exception_rolls_back_and_reraises(self):
        self.script("agent.py", '''
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track(name="sync-agent")
            def run():
                with jb.record_agent_turn(agent_name="coder", message="writing") as tx:
                    tx.stage_file_write("a.txt", "staged")
                    tx.stage_file_write("b.bin", bytes(range(256)))
                    raise ValueError("boom")

            try:
                run()
            except ValueError as e:
                print("raised", e)
        ''')
        self.assertIn("raised boom", self.python("agent.py").stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "a.txt")))
        [tape] = self.tapes()
        fs = [f for f in frames(tape) if f["kind"] != "control"]  # control-API exchanges, for replay
        rollback = [f for f in fs if f["kind"] == "tx.rollback"]
        self.assertEqual(rollback[0]["payload"]["reason"], "ValueError: boom")
        self.assertEqual(fs[-1]["payload"].get("exit_code"), 1)

    def test_breaker_cost_cap(self):
        self.script("agent.py", '''
            from jukebox import Jukebox, CircuitBreaker, BreakerTripped
            jb = Jukebox(breaker=CircuitBreaker(max_cost_usd=0.01))

            @jb.track(name="spender")
            def run():
                for i in range(5):
                    with jb.record_agent_turn(agent_name="planner", message=f"step {i}", model="gpt-4o", cost_usd=0.004):
                        pass
            try:
                run()
            except BreakerTripped as e:
                print("tripped", e.rule, round(e.cost, 3))
        ''')
        self.assertIn("tripped cost 0.012", self.python("agent.py").stdout)
        [tape] = self.tapes()
        ks = kinds(tape)
        self.assertEqual(ks.count("agent.turn"), 3, ks)
        self.assertIn("breaker.trip", ks)
        for bad in ({"max_cost_usd": 0}, {"max_repeat": 1}, {"max_cost_usd": "1"}):
            with self.subTest(bad=bad):
                proc = self.python("-c", f"from jukebox import CircuitBreaker; CircuitBreaker(**{bad!r})", check=False)
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn("CircuitBreaker(", proc.stderr)

    def test_an_agents_own_trip_stops_not_the_others(self):
        # Seen: once the coder's own cap tripped, every turn of the planner
        # raised BreakerTripped naming the coder (the turn asked for the
        # run's trip and raised whosever it was), its write never staged.
        self.script("agents.json", '{"agents": {"coder": {"max_cost_usd": 0.001}}}')
        self.script("agent.py", '''
            from jukebox import Jukebox, BreakerTripped
            jb = Jukebox()
            try:
                with jb.record_agent_turn(agent_name="coder", message="coder works", cost_usd=0.002):
                    pass
            except BreakerTripped as e:
                print("coder tripped", e.rule)
            try:
                with jb.record_agent_turn(agent_name="coder", message="coder again"):
                    pass
            except BreakerTripped as e:
                print("coder again tripped", e.rule)
            with jb.record_agent_turn(agent_name="planner", message="planner works") as tx:
                tx.stage_file_write("plan.txt", "the plan\\n")
            print("planner", tx.state)
        ''')
        proc = subprocess.run([BIN, "record", "--breaker-config", "agents.json", "-o", "t.jbx", "--", sys.executable, "agent.py"],
                              cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=120)
        self.assertIn("coder tripped cost", proc.stdout, proc.stderr)
        self.assertIn("coder again tripped cost", proc.stdout, proc.stderr)
        self.assertIn("planner committed", proc.stdout, proc.stderr)
        with open(os.path.join(self.dir, "plan.txt")) as f:
            self.assertEqual(f.read(), "the plan\n")
        self.assertEqual(proc.returncode, 7, proc.stderr)  # the run tripped: record says so at the end

    def test_a_block_whose_commit_fails_says_it_rolled_back(self):
        # Seen: a with-block whose commit failed (CommitConflict) was rolled
        # back (tx.state rolled_back, a tx.rollback on the tape), but
        # e.rolled_back said False, so a program following the exception's
        # advice (stage again and commit) got "transaction ... is rolled back".
        self.script("agent.py", '''
            from jukebox import Jukebox, CommitConflict
            jb = Jukebox(tape_dir="./tapes")
            with jb.track("conflict"):
                with open("ledger.json", "w") as f:
                    f.write("v1")
                try:
                    with jb.begin() as tx:
                        tx.stage_file_write("ledger.json", "agent's version")
                        tx.flush()
                        with open("ledger.json", "w") as f:
                            f.write("someone else's version")
                except CommitConflict as e:
                    print("state", tx.state, "rolled_back", e.rolled_back)
        ''')
        self.assertIn("state rolled_back rolled_back True", self.python("agent.py").stdout)
    def test_sandbox_violation(self):
        outside = tempfile.mkdtemp(prefix="jukebox-outside-")
        self.addCleanup(subprocess.run, ["rm", "-rf", outside])
        self.script("agent.py", f'''
            from jukebox import Jukebox, SandboxViolation, SandboxPolicy
            jb = Jukebox()
            tx = jb.begin()
            for p in ["../escape.txt", {os.path.join(outside, "x.txt")!r}, ".jukebox/booth/planted"]:
                try:
                    tx.stage_file_write(p, "x")
                    print("staged", p)
                except SandboxViolation as e:
                    print("refused", p)
            tx.commit()
            ro = Jukebox(sandbox=SandboxPolicy(filesystem="read_only"))
            try:
                ro.begin().stage_file_write("ok.txt", "x")
            except SandboxViolation:
                print("read_only refused")
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertEqual(out.count("refused"), 4, out)
        self.assertNotIn("staged", out)
        self.assertEqual(os.listdir(outside), [])
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(self.dir), "escape.txt")))

    def test_batched_error_names_the_operation(self):
        # Staged writes go in a batch with the commit: an error only the
        # booth can tell (the path is a folder) is raised there, naming the
        # write, and the transaction stays open for a rollback.
        os.mkdir(os.path.join(self.dir, "adir"))
        self.script("agent.py", '''
            from jukebox import Jukebox, JukeboxError
            jb = Jukebox()
            tx = jb.begin()
            tx.stage_file_write("ok.txt", "fine")
            tx.stage_file_write("adir", "x")
            try:  # text a plain write cannot encode is refused at once, as a plain write's
                tx.stage_file_write("lone.txt", "\\ud800")
            except UnicodeEncodeError:
                print("lone surrogate refused")
            import jukebox._tx
            jukebox._tx._MAX_WRITE = 4  # what a batch can carry, made small
            try:
                tx.stage_file_write("large.bin", b"12345")
            except ValueError as e:
                print("too large:", e)
            print("staged", tx.state)
            try:
                tx.commit()
            except JukeboxError as e:
                print("raised:", e, tx.state)
            tx.rollback("bad path")
            print("after", tx.state)
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("lone surrogate refused", out)
        self.assertIn("too large: stage_file_write('large.bin'): 5 bytes, over the 0 MiB", out)
        self.assertIn("staged open", out)
        self.assertIn("raised: staged write adir:", out)
        self.assertIn("after rolled_back", out)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "ok.txt")))

    def test_rollback_drops_a_write_that_failed(self):
        # A write only the booth refuses (its path is a folder) goes with
        # the rollback: the rollback used to stop at it, raise its error and
        # leave the transaction open, and a block's exception was replaced
        # by that error. Replayed alike from the tape.
        os.mkdir(os.path.join(self.dir, "adir"))
        self.script("agent.py", '''
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track(name="changes-its-mind")
            def run():
                tx = jb.begin()
                tx.stage_file_write("ok.txt", "fine")
                tx.stage_file_write("adir", "x")
                tx.rollback("changed my mind")
                print("rollback:", tx.state)
                try:
                    with jb.begin() as tx2:
                        tx2.stage_file_write("adir", "x")
                        raise RuntimeError("the agent's own error")
                except RuntimeError as e:
                    print("block raised:", e, tx2.state)
            run()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("rollback: rolled_back", out)
        self.assertIn("block raised: the agent's own error rolled_back", out)
        self.assertEqual(sorted(os.listdir(self.dir)), ["adir", "agent.py", "tapes"])
        [tape] = self.tapes()
        fs = [f for f in frames(tape) if f["kind"] != "control"]
        self.assertEqual([f["kind"] for f in fs].count("tx.rollback"), 2, fs)
        rep = subprocess.run([BIN, "replay", "--json", tape], cwd=self.dir, env=self.env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(rep.returncode, 0, rep.stdout + rep.stderr)
        self.assertIn("block raised: the agent's own error rolled_back", rep.stderr + rep.stdout)

    def test_a_failed_write_leaves_only_rollback(self):
        # A write refused as its batch was sent (a conflict found then)
        # stopped the batch: a retried commit committed without it and
        # without the write staged after it, returned 0 and said
        # "committed". A block whose commit failed was left open.
        os.mkdir(os.path.join(self.dir, "adir"))
        self.script("agent.py", '''
            from jukebox import Jukebox, JukeboxError, CommitConflict
            jb = Jukebox()
            t6, t7 = jb.begin(), jb.begin()
            t6.stage_file_write("h.txt", "six")
            t7.stage_file_write("h.txt", "seven")
            t7.stage_file_write("other2.txt", "two")
            t6.commit()
            try:
                t7.commit()
            except CommitConflict as e:
                print("conflict:", e.staged, t7.state)
            for what, call in (("commit", t7.commit), ("flush", t7.flush),
                               ("write", lambda: t7.stage_file_write("x.txt", "x"))):
                try:
                    call()
                    print(what, "went through")
                except JukeboxError as e:
                    print(what, "refused:", e)
            t7.rollback("conflict")
            print("after", t7.state)
            try:
                with jb.begin() as tx:
                    tx.stage_file_write("A.txt", "a")
                    tx.stage_file_write("adir", "b")
            except JukeboxError as e:
                print("block:", tx.state)
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("conflict: write open", out)
        for what in ("commit", "flush", "write"):
            self.assertRegex(out, what + r" refused: .*staged write h.txt failed, and the 1 staged after it was not sent; roll it back", out)
        self.assertIn("after rolled_back", out)
        self.assertIn("block: rolled_back", out)
        with open(os.path.join(self.dir, "h.txt")) as f:
            self.assertEqual(f.read(), "six")
        for name in ("other2.txt", "x.txt", "A.txt"):
            self.assertFalse(os.path.exists(os.path.join(self.dir, name)), name)

    def test_commit_cannot_change_the_tape(self):
        # Outside the booth a commit overwrote the tape recording it (the
        # run then failed: "file is 7 bytes, shorter than a tape header") or
        # deleted it; as in the booth, it is a SandboxViolation now, through
        # a link too, and the transaction stays open.
        self.script("agent.py", '''
            import os
            from jukebox import Jukebox, SandboxViolation
            jb = Jukebox()

            @jb.track(name="tape-keeper")
            def run():
                rel = os.path.relpath(jb.tape)
                os.symlink(rel, "link-to-tape")
                for what, stage in (("write", lambda tx: tx.stage_file_write(rel, "garbage")),
                                    ("delete", lambda tx: tx.stage_file_delete(rel)),
                                    ("link", lambda tx: tx.stage_file_write("link-to-tape", "garbage")),
                                    ("beside", lambda tx: tx.stage_file_write(os.path.join(os.path.dirname(rel), "planted.jbx"), "x"))):
                    tx = jb.begin()
                    stage(tx)
                    try:
                        tx.commit()
                        print(what, "committed")
                    except SandboxViolation as e:
                        print(what, "refused:", e, tx.state)
                        tx.rollback()
                tx = jb.begin()
                tx.stage_file_write("fine.txt", "ok")
                print("fine", tx.commit())
            run()
        ''')
        out = self.python("agent.py").stdout
        for what in ("write", "delete", "link", "beside"):
            self.assertRegex(out, what + " refused: .*tape being recorded.* open", out)
        self.assertIn("fine 1", out)
        [tape] = self.tapes()
        verify = subprocess.run([BIN, "verify", tape], capture_output=True, text=True)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        self.assertEqual(os.listdir(os.path.dirname(tape)), [os.path.basename(tape)])

    def test_sqlite_in_wal_mode_loses_nothing(self):
        # A database in WAL mode keeps its latest rows in its -wal: the
        # staged copy read without them ([] for a row that was there), and
        # after the commit the -wal's frames were played over the committed
        # database, its row gone, "commit 3" said all the same.
        self.script("agent.py", '''
            import sqlite3
            from jukebox import Jukebox, JukeboxError, CommitConflict
            jb = Jukebox()
            c = sqlite3.connect("wal.sqlite")
            c.execute("pragma journal_mode=wal"); c.execute("create table w(a)"); c.commit()
            c.execute("pragma wal_checkpoint(TRUNCATE)")
            c.execute("insert into w values ('in-wal-only')"); c.commit()
            tx = jb.begin()
            try:
                print("read", tx.stage_sql("wal.sqlite", "select * from w"))
            except JukeboxError as e:
                print("refused:", e)
            c.execute("pragma wal_checkpoint(TRUNCATE)")
            print("read", tx.stage_sql("wal.sqlite", "select * from w"))
            tx.stage_sql("wal.sqlite", "insert into w values ('from-tx')")
            c.execute("insert into w values ('meanwhile')"); c.commit()
            try:
                tx.commit()
            except CommitConflict as e:
                print("conflict:", e, tx.state)
                tx.rollback()
            c.close()  # the last connection checkpoints
            tx = jb.begin()
            tx.stage_sql("wal.sqlite", "insert into w values ('from-tx')")
            print("commit", tx.commit())
            print("rows", sqlite3.connect("wal.sqlite").execute("select * from w").fetchall())
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertRegex(out, r"refused: .*WAL mode.*wal.sqlite-wal.*wal_checkpoint", out)
        self.assertIn("read [('in-wal-only',)]", out)
        self.assertRegex(out, r"conflict: .*wal.sqlite-wal holds changes .* open", out)
        self.assertIn("rows [('in-wal-only',), ('meanwhile',), ('from-tx',)]", out)

    def test_begin_as_a_block(self):
        # `with jb.begin() as tx:` (as sqlite3 and psycopg hold theirs):
        # committed at the end, rolled back by an exception, which is raised
        # again; `async with` for begin(async_=True), which `with` refuses.
        self.script("agent.py", '''
            import asyncio
            from jukebox import Jukebox
            jb = Jukebox()
            with jb.begin() as tx:
                tx.stage_file_write("kept.txt", "kept")
            print("state", tx.state)
            try:
                with jb.begin() as tx:
                    tx.stage_file_write("dropped.txt", "dropped")
                    raise KeyError("no such customer")
            except KeyError:
                print("state", tx.state)
            with jb.begin() as tx:
                tx.stage_file_write("mine.txt", "mine")
                tx.rollback("changed my mind")  # ended in the block: left so
            print("state", tx.state)

            async def main():
                async with jb.begin(async_=True) as atx:
                    atx.stage_file_write("async.txt", "async")
                print("state", atx.state)
                try:
                    with jb.begin(async_=True):
                        pass
                except TypeError as e:
                    print("TypeError", e)
            asyncio.run(main())
            try:
                jb.begin().stage_sql("", "SELECT 1")
            except ValueError as e:
                print("ValueError", e)
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertEqual(out.count("state committed"), 2, out)
        self.assertEqual(out.count("state rolled_back"), 2, out)
        self.assertIn("TypeError an AsyncTransaction is used with `async with`", out)
        self.assertIn("ValueError stage_sql(dsn_or_path=''): want a postgres:// URL", out)
        for name, there in (("kept.txt", True), ("dropped.txt", False), ("mine.txt", False), ("async.txt", True)):
            self.assertEqual(os.path.exists(os.path.join(self.dir, name)), there, name)
        [tape] = self.tapes()
        reasons = [f["payload"].get("reason") for f in frames(tape) if f["kind"] == "tx.rollback"]
        self.assertIn("KeyError: 'no such customer'", reasons)
        self.assertIn("changed my mind", reasons)

    def test_readme_quickstart_runs_verbatim(self):
        # python/README.md's quickstart, copied as it is, exited 1: it
        # loaded ./tapes/some_trace.jbx, which no run writes.
        with open(os.path.join(SDK, "README.md")) as f:
            readme = f.read()
        block = readme.split("## Quickstart", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
        self.script("agent.py", block)
        out = self.python("agent.py").stdout
        self.assertIn("COMMITTED", out)
        self.assertIn("'tx.commit'", out)

    def test_bad_arguments_raise_before_anything_is_sent(self):
        # These went to the server and came back as Go decoder text
        # (JukeboxError), or were taken: a wrong type is a TypeError at
        # once, and a transaction held with the wrong kind of `with` is
        # rolled back, not left open to the run's end.
        self.script("agent.py", '''
            import asyncio
            from jukebox import Jukebox, Tape
            jb = Jukebox()
            tx = jb.begin()
            for name, call in (("run_shell", lambda: tx.run_shell(42)), ("rollback", lambda: tx.rollback(reason=42)),
                               ("close", lambda: jb.close(exit_code="x")), ("close error", lambda: jb.close(error=1)),
                               ("load", lambda: Tape.load(123)), ("begin", lambda: jb.begin(async_="yes"))):
                try:
                    call()
                    print(name, "taken")
                except TypeError as e:
                    print(name, "TypeError", e)
            print("state", tx.state)
            tx.rollback("done")

            async def main():
                try:
                    async with jb.begin():
                        print("entered")
                except TypeError as e:
                    print("async with TypeError", e)
                try:
                    with jb.begin(async_=True):
                        print("entered")
                except TypeError as e:
                    print("with TypeError", e)
            asyncio.run(main())
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        for name in ("run_shell", "rollback", "close", "close error", "load", "begin"):
            self.assertIn(f"{name} TypeError", out)
        self.assertNotIn("taken", out)
        self.assertNotIn("entered", out)
        self.assertIn("state open", out)
        self.assertIn("async with TypeError `async with` takes jb.begin(async_=True)", out)
        self.assertIn("with TypeError an AsyncTransaction is used with `async with`", out)
        [tape] = self.tapes()
        fs = frames(tape)
        reasons = [f["payload"].get("reason", "") for f in fs if f["kind"] == "tx.rollback"]
        self.assertEqual(sum(r.startswith("held the wrong way") for r in reasons), 2, reasons)
        self.assertNotIn("the run ended with the transaction open", " ".join(reasons))
        [end] = [f for f in fs if f["kind"] == "run.end"]
        self.assertEqual(end["payload"].get("exit_code", 0), 0, end)

    def test_commit_conflict_keeps_the_transaction_open(self):
        with open(os.path.join(self.dir, "ledger.json"), "w") as f:
            f.write("v1")
        self.script("agent.py", '''
            from jukebox import Jukebox, CommitConflict
            jb = Jukebox()
            tx = jb.begin()
            tx.stage_file_write("ledger.json", "agent's")
            with open("ledger.json", "w") as f:
                f.write("user's")  # the real file changes under the staged one
            try:
                tx.commit()
            except CommitConflict as e:
                print("conflict", [c["path"] for c in e.conflicts], tx.state)
            tx.rollback("the user edited it")
            print("after", open("ledger.json").read())
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("conflict ['ledger.json'] open", out)
        self.assertIn("after user's", out)

    def test_shell_and_sqlite_are_staged(self):
        db = os.path.join(self.dir, "app.db")
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, usd REAL)")
        conn.commit()
        conn.close()
        self.script("agent.py", '''
            import os, sqlite3, sys
            from jukebox import Jukebox
            jb = Jukebox()

            def real_rows():
                c = sqlite3.connect("app.db")
                try:
                    return c.execute("SELECT count(*) FROM refunds").fetchone()[0]
                finally:
                    c.close()

            tx = jb.begin()
            r = tx.run_shell("echo hello > s.txt; cat s.txt; exit 3")
            print("shell", r.exit_code, r.stdout.strip(), os.path.exists("s.txt"))
            tx.stage_sql("app.db", "INSERT INTO refunds (usd) VALUES (?)", [12.5])
            print("staged rows", tx.stage_sql("app.db", "SELECT count(*) FROM refunds")[0][0], "real rows", real_rows())
            tx.commit()
            print("after commit", real_rows(), open("s.txt").read().strip())
            tx = jb.begin()
            tx.stage_sql("app.db", "INSERT INTO refunds (usd) VALUES (?)", [600])
            tx.rollback("over the threshold")
            print("after rollback", real_rows())
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("shell 3 hello False", out)
        self.assertIn("staged rows 1 real rows 0", out)
        self.assertIn("after commit 1 hello", out)
        self.assertIn("after rollback 1", out)

    def test_postgres_rows_keep_their_types(self):
        # They came as json.Marshal left pgx's values: a numeric as a JSON
        # number (a float here: 12345678901234567890.123456789 lost its
        # digits), a uuid as 16 numbers, a time and an interval as Go
        # structs ({"Microseconds": ...}), a bytea as base64 text, a date
        # as a UTC midnight timestamp, and a float8 NaN failed the answer.
        if not PG_DSN:
            if REQUIRE_ALL:
                self.fail("JUKEBOX_PG_DSN is not set: .ci starts PostgreSQL for this test")
            self.skipTest('needs PostgreSQL: eval "$(bash .ci/postgres.sh)"')
        self.script("agent.py", f'''
            import datetime, decimal, uuid
            from jukebox import Jukebox
            jb = Jukebox()
            tx = jb.begin()
            [row] = tx.stage_sql({PG_DSN!r}, """SELECT '\\\\xdeadbeef'::bytea, 12345678901234567890.123456789::numeric,
                date '2024-02-29', timestamp '2024-01-02 03:04:05.5', timestamptz '2024-01-02 03:04:05+02',
                time '12:34:56', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, interval '1 day 2 hours',
                'NaN'::float8, ARRAY[date '2024-01-01', NULL], 'infinity'::date, 7, 'text', '{{"a": [1, 2]}}'::jsonb,
                NULL::numeric""")
            tx.rollback("read only")
            want = (b"\\xde\\xad\\xbe\\xef", decimal.Decimal("12345678901234567890.123456789"),
                    datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 2, 3, 4, 5, 500000),
                    datetime.datetime(2024, 1, 2, 1, 4, 5, tzinfo=datetime.timezone.utc),
                    datetime.time(12, 34, 56), uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
            for i, w in enumerate(want):
                assert row[i] == w, (i, row[i], w)
            assert row[4].utcoffset() is not None, row[4]
            assert row[7] == "1 day 02:00:00", row[7]
            assert row[8] != row[8], row[8]  # NaN
            assert row[9] == [datetime.date(2024, 1, 1), None], row[9]
            assert row[10:] == ("infinity", 7, "text", {{"a": [1, 2]}}, None), row[10:]
            print("rows typed")
            jb.close()
        ''')
        self.assertIn("rows typed", self.python("agent.py").stdout)

    def test_postgres_takes_numbers_where_it_infers_text(self):
        # "select $1" with 5 failed in pgx ("unable to encode 5 into text
        # format for text (OID 25): cannot find encode plan", no SQLSTATE),
        # as did 1.5 and True; NaN and infinity failed as JSON the server
        # could not read ("invalid character 'N'").
        if not PG_DSN:
            if REQUIRE_ALL:
                self.fail("JUKEBOX_PG_DSN is not set: .ci starts PostgreSQL for this test")
            self.skipTest('needs PostgreSQL: eval "$(bash .ci/postgres.sh)"')
        self.script("agent.py", f'''
            import math
            from jukebox import Jukebox
            jb = Jukebox()
            tx = jb.begin()
            dsn = {PG_DSN!r}
            print(tx.stage_sql(dsn, "select $1", [5]), tx.stage_sql(dsn, "select %s", [1.5]),
                  tx.stage_sql(dsn, "select $1 || 'x'", [5]), tx.stage_sql(dsn, "select $1::int + 1", [5]))
            [(nan, ninf, inf)] = tx.stage_sql(dsn, "select $1::float8, $2::float8, $3::numeric",
                                              [float("nan"), float("-inf"), float("inf")])
            print("nan", math.isnan(nan), ninf, inf)
            print("bool", tx.stage_sql(dsn, "select $1::bool", [True]))
            tx.rollback("read only")
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("[('5',)] [('1.5',)] [('5x',)] [(6,)]", out)
        self.assertIn("nan True -inf Infinity", out)
        self.assertIn("bool [(True,)]", out)

    def test_postgres_joins_the_transaction(self):
        if not PG_DSN:
            if REQUIRE_ALL:
                self.fail("JUKEBOX_PG_DSN is not set: .ci starts PostgreSQL for this test")
            self.skipTest('needs PostgreSQL: eval "$(bash .ci/postgres.sh)"')
        self.script("agent.py", f'''
            from jukebox import Jukebox
            dsn = {PG_DSN!r}
            jb = Jukebox()
            setup = jb.begin()
            setup.stage_sql(dsn, "DROP TABLE IF EXISTS sdk_refunds")
            setup.stage_sql(dsn, "CREATE TABLE sdk_refunds (id serial PRIMARY KEY, usd numeric)")
            setup.commit()

            def count():
                other = jb.begin()  # a connection of its own
                try:
                    return other.stage_sql(dsn, "SELECT count(*) FROM sdk_refunds")[0][0]
                finally:
                    other.rollback("read only")

            tx = jb.begin()
            tx.stage_file_write("ledger.json", "{{}}")
            tx.stage_sql(dsn, "INSERT INTO sdk_refunds (usd) VALUES ($1)", [12.5])
            print("inside", tx.stage_sql(dsn, "SELECT count(*) FROM sdk_refunds")[0][0], "other", count())
            tx.commit()
            print("after commit", count())
            tx = jb.begin()
            tx.stage_sql(dsn, "INSERT INTO sdk_refunds (usd) VALUES ($1)", [900])
            tx.rollback("too much")
            print("after rollback", count())
            jb.close()
        ''')
        out = self.python("agent.py").stdout
        self.assertIn("inside 1 other 0", out)
        self.assertIn("after commit 1", out)
        self.assertIn("after rollback 1", out)
        [tape] = self.tapes()
        commits = [f for f in frames(tape) if f["kind"] == "tx.commit"]
        self.assertEqual([c["payload"]["changes"] for c in commits], [0, 1])
        # The statements each decision held are on its frame, as a booth
        # run's are (the read-only count() transactions list none).
        sql = [[(st["sql"], st.get("tag"), st.get("sensitive")) for s in f["payload"].get("sql", []) for st in s["statements"]]
               for f in frames(tape) if f["kind"] in ("tx.commit", "tx.rollback")]
        insert = "INSERT INTO sdk_refunds (usd) VALUES ($1)"
        self.assertEqual(sql, [
            [("DROP TABLE IF EXISTS sdk_refunds", "DROP TABLE", ["drops a table"]),
             ("CREATE TABLE sdk_refunds (id serial PRIMARY KEY, usd numeric)", "CREATE TABLE", None)],
            [("SELECT count(*) FROM sdk_refunds", "SELECT 1", None)],  # count() inside
            [(insert, "INSERT 0 1", None), ("SELECT count(*) FROM sdk_refunds", "SELECT 1", None)],
            [("SELECT count(*) FROM sdk_refunds", "SELECT 1", None)],
            [(insert, "INSERT 0 1", None)],  # rolled back: "too much"
            [("SELECT count(*) FROM sdk_refunds", "SELECT 1", None)]])
        shown = subprocess.run([BIN, "show", tape, "--kind", "tx.commit"], capture_output=True, text=True, check=True).stdout
        self.assertIn("1 change, 2 SQL statements", shown)

    def test_record_and_standalone_give_the_same_frames(self):
        self.script("agent.py", '''
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track(name="same")
            def run():
                with jb.record_agent_turn(agent_name="planner", message="plan", model="gpt-4o", cost_usd=0.001) as tx:
                    tx.stage_file_write("notes.txt", "one")
                with jb.record_agent_turn(agent_name="coder", message="code") as tx:
                    tx.stage_file_delete("notes.txt")
            run()
        ''')
        self.python("agent.py")
        [alone] = self.tapes()
        os.rename(alone, os.path.join(self.dir, "alone.jbx"))
        rec = subprocess.run([BIN, "record", "--name", "same", "-o", "recorded.jbx", "--", sys.executable, "agent.py"],
                             cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=120)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertEqual(self.tapes(), [], "under record the SDK must not start a run of its own")

        def shape(path):
            out = []
            for f in frames(os.path.join(self.dir, path)):
                if f["kind"] == "control":  # they name the transaction's id
                    continue
                p = dict(f["payload"])
                # a step's chain head hashes the frames before it, run.start's argv among them
                for k in ("tx", "argv", "seed", "started", "env", "host", "cwd", "upstreams", "jukebox_version", "mtime_ns", "body", "external",
                          "chain"):
                    p.pop(k, None)
                out.append((f["kind"], p))
            return out
        self.assertEqual(shape("alone.jbx"), shape("recorded.jbx"))
        # jukebox serve did not start the process it recorded: run.start says so.
        starts = [frames(os.path.join(self.dir, t))[0]["payload"].get("external") for t in ("alone.jbx", "recorded.jbx")]
        self.assertEqual(starts, [True, None])

    def test_standalone_run_replays_strict(self):
        # A run recorded by the SDK on its own (jukebox serve) has no output
        # on its tape: jukebox did not start the process. Its replay runs the
        # script under jukebox, whose output is then captured; replay
        # --strict must not call that a difference from the recording.
        self.script("agent.py", '''
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track(name="printer")
            def run():
                with jb.record_agent_turn(agent_name="planner", message="plan") as tx:
                    tx.stage_file_write("notes.txt", "one")
                print("planned and wrote notes.txt")
            run()
        ''')
        self.assertIn("planned", self.python("agent.py").stdout)
        [tape] = self.tapes()
        rep = subprocess.run([BIN, "replay", "--strict", "--json", tape], cwd=self.dir, env=self.env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(rep.returncode, 0, rep.stdout + rep.stderr)
        out = json.loads(rep.stdout)
        self.assertTrue(out.get("output_not_recorded"), out)
        self.assertNotIn("output_same", out)
        human = subprocess.run([BIN, "replay", tape, "-o", "replayed.jbx"], cwd=self.dir, env=self.env,
                               capture_output=True, text=True, timeout=120)
        self.assertIn("stdout not compared (the recording has none", human.stderr)
        # diff leaves the replay's output out: the recording has none to match it.
        diff = subprocess.run([BIN, "diff", "--json", tape, "replayed.jbx"], cwd=self.dir, env=self.env,
                              capture_output=True, text=True, timeout=120, check=True)
        d = json.loads(diff.stdout)
        self.assertTrue(d["equal"], diff.stdout[:2000])
        self.assertEqual(d.get("output_left_out"), "right")

    def test_booth_run_stages_sdk_transactions_into_the_booth(self):
        # In the booth an SDK transaction commits into the booth's own
        # transaction, settled with the run: --commit never keeps it out.
        self.script("agent.py", '''
            from jukebox import Jukebox
            jb = Jukebox()
            with jb.record_agent_turn(agent_name="a", message="turns still work") as tx:
                tx.stage_file_write("notes.txt", "staged")
        ''')
        # The booth's /tmp is private: a checkout under /tmp is not seen from
        # inside it, so the package goes into the workspace.
        shutil.copytree(os.path.join(SDK, "jukebox"), os.path.join(self.dir, "sdk", "jukebox"))
        env = dict(self.env, PYTHONPATH=os.path.join(self.dir, "sdk"))
        rec = subprocess.run([BIN, "record", "--booth", "--commit", "never", "-o", "booth.jbx", "--", sys.executable, "agent.py"],
                             cwd=self.dir, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertIn("write notes.txt", rec.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "notes.txt")))
        self.assertIn("agent.turn", kinds(os.path.join(self.dir, "booth.jbx")))

    def test_fork_and_diff(self):
        model = subprocess.Popen([BIN, "demo-model", "--addr", "127.0.0.1:0", "--json", "--quiet"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(model.stdout.close)
        self.addCleanup(model.wait)
        self.addCleanup(model.terminate)
        text = ""
        while True:
            line = model.stdout.readline()
            self.assertTrue(line, "demo-model printed no URLs")
            text += line
            try:
                urls = json.loads(text)
                break
            except ValueError:
                continue
        self.script("agent.py", '''
            import json, os, urllib.request
            from jukebox import Jukebox
            jb = Jukebox()

            @jb.track(name="asker")
            def run():
                base = os.environ["OPENAI_BASE_URL"]
                for q in ["plan the refund", "check the ledger"]:
                    req = urllib.request.Request(base + "/chat/completions", method="POST",
                        data=json.dumps({"model": "demo-large", "messages": [{"role": "user", "content": q}]}).encode(),
                        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
                    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req) as r:
                        print(json.load(r)["choices"][0]["message"]["content"][:40])
            run()
        ''')
        env = dict(self.env, OPENAI_BASE_URL=urls["openai_base_url"], OPENAI_API_KEY="sk-test")
        self.python("agent.py", env=env)
        [path] = self.tapes()
        sys.path.insert(0, SDK)
        os.environ.update(JUKEBOX_BIN=BIN, PYTHONPATH=SDK)  # the fork runs the agent again
        from jukebox import JukeboxError, Tape
        tape = Tape.load(path)
        self.assertEqual(tape.name, "asker")
        second = [f.seq for f in tape.frames if f.kind == "llm.request"][1]
        cwd = os.getcwd()
        os.chdir(self.dir)
        try:
            # A prompt ending in a newline keeps it: the CLI leaves out only
            # the newline that ends a file's last line.
            fork = tape.fork(frame=second, model="demo-small", system_prompt="Be brief.\n", booth=False,
                             output=os.path.join(self.dir, "fork.jbx"), upstreams={"openai": urls["openai_base_url"]})
        finally:
            os.chdir(cwd)
        self.assertEqual(fork.path, os.path.join(self.dir, "fork.jbx"))
        self.assertEqual(fork.exit_code, 0, fork.frames)
        models = [f.payload.get("model") for f in fork.frames if f.kind == "llm.request"]
        self.assertEqual(models, ["demo-large", "demo-small"])
        overrides = fork.frames[0].payload["parent"]["overrides"]
        self.assertEqual(overrides.get("system_prompt"), "Be brief.\n", overrides)
        d = tape.diff(fork)
        first = d["first_divergence"]
        self.assertEqual((first["kind"], first["left_seq"]), ("llm.request", second), first)
        with self.assertRaises(JukeboxError):
            Tape.load(os.path.join(self.dir, "missing.jbx"))

    def test_pip_install_editable_offline(self):
        venv = os.path.join(self.dir, "venv")
        py = os.path.join(venv, "bin", "python")
        # The interpreter's own pip installs into the venv (pip --python,
        # pip 22.3 on) when it has one: bootstrapping a pip into the venv
        # costs seconds.
        pip = [sys.executable, "-m", "pip", "--python", py]
        if subprocess.run([*pip[:4], sys.executable, "--version"], capture_output=True).returncode == 0:
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, capture_output=True)
        else:
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
            pip = [py, "-m", "pip"]
        for extra in (["--no-build-isolation"], []):
            with self.subTest(extra=extra):
                proc = subprocess.run([*pip, "install", "-q", "--no-index", *extra, "-e", SDK],
                                      capture_output=True, text=True, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                where = subprocess.run([py, "-c", "import jukebox; print(jukebox.__file__)"], cwd=venv,
                                       capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
                self.assertEqual(where.stdout.strip(), os.path.join(SDK, "jukebox", "__init__.py"), where.stderr)

    def test_missing_binary(self):
        env = dict(self.env, JUKEBOX_BIN="", PATH="/nonexistent")
        proc = self.python("-c", "from jukebox import Jukebox; Jukebox().begin()", env=env, check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("jukebox binary not found", proc.stderr)

    def test_import_leaves_heavy_modules_out(self):
        # A sync agent does not pay for asyncio (about 45 ms a start on
        # a slow machine) or sqlite3 when it imports the SDK: the async
        # methods and SQLite statements import them when they run. Nor
        # for http.client (email's parser, ssl: 38 ms), urllib.parse,
        # subprocess, tempfile or shutil, which only some paths need.
        heavy = ("asyncio", "sqlite3", "http.client", "email", "ssl", "urllib.parse", "subprocess", "tempfile",
                 "shutil")
        # What the interpreter loaded before (an interpreter whose site
        # imports certifi through a .pth file loads tempfile and shutil
        # at every start) is not the SDK's.
        proc = self.python("-c", "import sys; before = set(sys.modules); import jukebox; "
                           f"print(sorted(m for m in {heavy!r} if m in sys.modules and m not in before))")
        self.assertEqual(proc.stdout.strip(), "[]", proc.stderr)


class BreakerWarningTest(unittest.TestCase):
    def test_warned_under_record_not_under_replay(self):
        # Seen: every replay of a tape whose script sets a CircuitBreaker
        # warned that the agent "runs under jukebox record". A replay has
        # no breaker (it tells the agent of the recording's trip).
        import warnings
        from jukebox import CircuitBreaker, Jukebox
        for mode, warned in (("record", True), ("fork", True), ("replay", False)):
            env = {"JUKEBOX_CONTROL": "http://127.0.0.1:9/", "JUKEBOX_CONTROL_TOKEN": "t", "JUKEBOX_MODE": mode}
            with unittest.mock.patch.dict(os.environ, env), warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                Jukebox(breaker=CircuitBreaker(max_cost_usd=1.0))
            got = any("runs under jukebox record" in str(w.message) for w in seen)
            self.assertEqual(got, warned, mode)


class BreakerArgsTest(unittest.TestCase):
    def test_a_repeat_limit_is_a_whole_number(self):
        # 2.0 and 2.5 are at least 2: the message said "a repeat is seen
        # at least twice", which they are; the rule is a whole number.
        from jukebox import CircuitBreaker
        for bad in (2.0, 2.5, 1, 0):
            with self.assertRaisesRegex(ValueError, "want a whole number, 2 or more"):
                CircuitBreaker(max_repeat=bad)
        self.assertEqual(CircuitBreaker(max_repeat=2).config(), {"max_repeat": 2})


class StagedPathTest(unittest.TestCase):
    def test_a_path_ending_in_a_slash_is_a_folder(self):
        # stage_file_write("ok.txt/", ...) wrote the file ok.txt, where
        # open("ok.txt/", "w") raises IsADirectoryError.
        from jukebox import Transaction
        tx = Transaction(None, "tx-1", os.getcwd(), "", False)  # type: ignore[arg-type]
        with self.assertRaises(IsADirectoryError):
            tx.stage_file_write("ok.txt/", "x")
        # "trail/." wrote a file named trail; open("trail/.", "w") raises.
        for p in ("trail/.", "trail/..", "."):
            with self.assertRaises(IsADirectoryError):
                tx.stage_file_write(p, "x")

    def test_bad_arguments_raise_before_anything_is_sent(self):
        # mode=-1 went to the booth and came back as Go's decoder text
        # ("batch op 0: ... cannot unmarshal number -1 into ... uint32");
        # a bytes path raised "a bytes-like object is required, not 'str'".
        from jukebox import Transaction
        tx = Transaction(None, "tx-1", os.getcwd(), "", False)  # type: ignore[arg-type]
        for mode in (-1, 2 ** 40, 0o10000):
            with self.assertRaisesRegex(ValueError, "0 to 0o7777"):
                tx.stage_file_write("m.txt", "x", mode=mode)
        with self.assertRaisesRegex(TypeError, "want a str or a path"):
            tx.stage_file_write(b"x.txt", "x")  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, "want a str or a path"):
            tx.stage_file_delete(b"x.txt")  # type: ignore[arg-type]
        self.assertEqual(tx._pending, [])

    def test_a_turn_names_its_agent(self):
        # agent_name="" was taken, and the turn named no agent.
        from jukebox import Jukebox
        jb = Jukebox.__new__(Jukebox)
        for name in ("", "  "):
            with self.assertRaisesRegex(ValueError, "want the agent's name"):
                jb.record_agent_turn(agent_name=name, message="hi")


class PathTest(unittest.TestCase):
    def test_paths_are_relative_to_the_workspace_from_any_folder(self):
        # The quick way of a clean relative path gives what abspath and
        # relpath give, from the workspace, a folder below it, a folder
        # beside it whose name starts alike, and outside it.
        from jukebox import Transaction
        root = os.path.realpath(tempfile.mkdtemp())
        ws = os.path.join(root, "ws")
        for d in ("ws/sub/deeper", "ws-other"):
            os.makedirs(os.path.join(root, d))
        here = os.getcwd()
        self.addCleanup(os.chdir, here)
        tx = Transaction(None, "tx-1", ws, "", False)  # type: ignore[arg-type]
        for cwd in ("ws", "ws/sub", "ws/sub/deeper", "ws-other", "."):
            os.chdir(os.path.join(root, cwd))
            for p in ("a.txt", "d/e.txt", "./a.txt", "d/../a.txt", "d//e.txt", "..", "../a.txt", "../../x",
                      os.path.join(ws, "abs.txt"), "/elsewhere/x"):
                full = os.path.abspath(p)
                rel = os.path.relpath(full, ws)
                want = p if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
                self.assertEqual(tx._path(p), want, f"{p!r} from {cwd}")


class SQLPlaceholderTest(unittest.TestCase):
    """stage_sql's placeholders for PostgreSQL (jukebox._sql), alone."""

    def test_native_placeholders_keep_every_percent(self):
        # A $1 statement with ' %s' or '100%%' in a string went through
        # psycopg's rules: ' %s' became ' $1', '100%%' became '100%'.
        from jukebox import _sql
        self.assertEqual(_sql.postgres("select $1::text || ' %s'", ("a",)), ("select $1::text || ' %s'", ["a"]))
        self.assertEqual(_sql.postgres("select $1::text || ' 100%%'", ("a",)), ("select $1::text || ' 100%%'", ["a"]))

    def test_pyformat(self):
        from jukebox import _sql
        self.assertEqual(_sql.postgres("select %s, '100%%'", ("a",)), ("select $1, '100%'", ["a"]))
        self.assertEqual(_sql.postgres("select %(x)s, %(y)s, %(x)s", {"x": 1, "y": 2}), ("select $1, $2, $1", [1, 2]))
        with self.assertRaises(ValueError):
            _sql.postgres("select %s, %s", ("a",))

    def test_a_value_json_cannot_carry_is_named(self):
        # It was json's "Object of type bytes is not JSON serializable",
        # raised from deep in the SDK without a word of stage_sql.
        from jukebox import _sql
        with self.assertRaisesRegex(TypeError, r"stage_sql: params\[1\] = b'\\x01': a bytes does not go to PostgreSQL"):
            _sql.postgres("select $1, $2", ("a", b"\x01"))

if __name__ == "__main__":
    unittest.main()


class CommitUnansweredTest(unittest.TestCase):
    # jukebox killed under a commit: the SDK said only that the control API
    # did not answer, while the workspace held part of the commit until a
    # recover played its journal.
    def test_commit_with_no_answer_names_booth_recover(self):
        sys.path.insert(0, SDK)
        from jukebox._tx import Transaction
        from jukebox.errors import JukeboxError

        class Gone:
            json_batches = False

            def call(self, method, path, body=None):
                err = JukeboxError("the jukebox control API at http://127.0.0.1:1 does not answer: [Errno 111] Connection refused")
                err.unanswered = True
                raise err

            send = call

        tx = Transaction(Gone(), "tx-1", "/work/space", "", False)
        with self.assertRaisesRegex(JukeboxError, r"may have been under way.*jukebox booth recover -C /work/space"):
            tx.commit()
